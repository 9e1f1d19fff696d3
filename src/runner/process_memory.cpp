#include "runner/process_memory.h"


#include <fstream>

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


}  // namespace edgeprobe::runner
