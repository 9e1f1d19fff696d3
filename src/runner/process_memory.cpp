#include "runner/process_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <vector>

namespace edgeprobe::runner {
namespace {

int64_t status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stoll(line.substr(prefix.size())) * 1024;
  }
  return -1;
}

}  // namespace

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

int64_t peak_rss_bytes() { return status_kib("VmHWM"); }
int64_t current_rss_bytes() { return status_kib("VmRSS"); }

double page_cache_resident_share(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    close(fd);
    return -1;
  }
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return -1;
  const long page = sysconf(_SC_PAGESIZE);
  const size_t pages = (static_cast<size_t>(st.st_size) + static_cast<size_t>(page) - 1) / static_cast<size_t>(page);
  std::vector<unsigned char> resident(pages);
  double share = -1;
  if (mincore(map, static_cast<size_t>(st.st_size), resident.data()) == 0) {
    size_t n = 0;
    for (unsigned char r : resident) n += r & 1;
    share = static_cast<double>(n) / static_cast<double>(pages);
  }
  munmap(map, static_cast<size_t>(st.st_size));
  return share;
}

}  // namespace edgeprobe::runner
