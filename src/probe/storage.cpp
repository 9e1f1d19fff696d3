#include "probe/storage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"

namespace edgeprobe::probe {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads [0, bytes) sequentially; returns MB/s or a negative value with `why` set.
double timed_read(int fd, uint64_t bytes, uint64_t chunk, std::string& why) {
  std::vector<char> buffer(chunk);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t done = 0;
  while (done < bytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk, bytes - done));
    const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(done));
    if (got < 0) {
      if (errno == EINTR) continue;
      why = std::string("read failed: ") + std::strerror(errno);
      return -1;
    }
    if (got == 0) break;
    done += static_cast<uint64_t>(got);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (done == 0 || s <= 0) {
    why = "nothing read";
    return -1;
  }
  return static_cast<double>(done) / s / 1e6;
}

// Pids (comma separated, at most a few) whose mappings include `path`: pages a process has
// mapped stay cached whatever fadvise or drop_caches say.
std::string processes_mapping(const std::string& path) {
  std::string out;
  int found = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0])) || pid == std::to_string(::getpid())) continue;
    std::ifstream maps(it->path() / "maps");
    std::string line;
    while (std::getline(maps, line)) {
      if (line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0) {
        out += (out.empty() ? "" : ",") + pid;
        ++found;
        break;
      }
    }
    if (found >= 4) break;
  }
  return out;
}

}  // namespace

namespace {

// mincore over a read-only mapping of the first `bytes` of the file.
std::vector<bool> residency(const std::string& path, uint64_t bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0 || bytes == 0) return {};
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return {};
  const long page = ::sysconf(_SC_PAGESIZE);
  const size_t pages = static_cast<size_t>((bytes + static_cast<uint64_t>(page) - 1) / static_cast<uint64_t>(page));
  std::vector<unsigned char> vec(pages);
  std::vector<bool> out;
  if (::mincore(map, bytes, vec.data()) == 0) {
    out.resize(pages);
    for (size_t i = 0; i < pages; ++i) out[i] = vec[i] & 1u;
  }
  ::munmap(map, bytes);
  return out;
}

}  // namespace

double resident_fraction(const std::string& path, uint64_t bytes) {
  const auto pages = residency(path, bytes);
  if (pages.empty()) return -1;
  return static_cast<double>(std::count(pages.begin(), pages.end(), true)) / static_cast<double>(pages.size());
}

std::vector<bool> page_residency(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  return residency(path, static_cast<uint64_t>(st.st_size));
}

void evict_pages_not_in(const std::string& path, const std::vector<bool>& keep) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return;
  const auto page = static_cast<off_t>(::sysconf(_SC_PAGESIZE));
  for (size_t i = 0; i < keep.size();) {
    if (keep[i]) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < keep.size() && !keep[j]) ++j;
    ::posix_fadvise(fd.get(), static_cast<off_t>(i) * page, static_cast<off_t>(j - i) * page, POSIX_FADV_DONTNEED);
    i = j;
  }
}

StorageResult measure_storage(const std::string& path, const StorageOptions& options) {
  StorageResult r;
  r.path = path;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw_bad_input("storage probe: cannot open '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) throw_bad_input("storage probe: '{}' is not a regular file", path);
  r.file_bytes = static_cast<uint64_t>(st.st_size);
  r.file_mtime_s = static_cast<int64_t>(st.st_mtime);
  r.bytes_read = std::min<uint64_t>(r.file_bytes, options.max_bytes);
  if (r.bytes_read == 0) throw_bad_input("storage probe: '{}' is empty", path);
  // What was cached before, to put back after: a probe must not warm the file that bench
  // loads next (its first load would no longer be cold).
  const std::vector<bool> cached_before = page_residency(path);

  // Cold: ask the kernel to drop this file's clean pages (posix_fadvise(2), POSIX_FADV_DONTNEED;
  // needs no privilege but leaves pages other processes have mapped), then check with
  // mincore(2) that they are really gone before calling the read cold.
  // Dirty pages are not dropped (a freshly written file), so write them back first.
  std::string method;
  ::fdatasync(fd.get());
  if (::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED) == 0) method = "posix_fadvise DONTNEED";
  double resident = resident_fraction(path, r.bytes_read);
  // Pages another process has mapped survive drop_caches too: then dropping every cache on
  // the machine would only slow its neighbours down.
  const std::string holders = resident > 0.01 ? processes_mapping(path) : "";
  if (resident > 0.01 && holders.empty() && options.allow_drop_caches && ::geteuid() == 0) {
    // Documentation/admin-guide/sysctl/vm.rst: "1" frees the page cache, system wide.
    ::sync();
    std::ofstream drop("/proc/sys/vm/drop_caches");
    if (drop && (drop << "1" << std::flush)) method = "/proc/sys/vm/drop_caches";
    drop.close();
    resident = resident_fraction(path, r.bytes_read);
  }
  if (resident < 0) {
    r.cold_status = "unavailable: cannot tell page-cache residency (mincore failed)";
  } else if (resident > 0.01) {
    r.cold_status = fmt::format("unavailable: {:.1f}% of the file stayed in the page cache after {}{}", resident * 100,
                                method.empty() ? "no eviction method worked" : method,
                                holders.empty() ? "" : " (mapped by pid " + holders + ")");
  } else {
    std::string why;
    const double mb_per_s = timed_read(fd.get(), r.bytes_read, options.chunk_bytes, why);
    if (mb_per_s > 0) {
      r.cold_mb_per_s = mb_per_s;
      r.cold_status = fmt::format("measured ({}, {:.1f}% resident before)", method, resident * 100);
    } else {
      r.cold_status = "unavailable: " + why;
    }
  }

  // Warm: one pass to fill the cache (the cold read may already have), then the best of two.
  std::string why;
  timed_read(fd.get(), r.bytes_read, options.chunk_bytes, why);
  const double w1 = timed_read(fd.get(), r.bytes_read, options.chunk_bytes, why);
  const double w2 = timed_read(fd.get(), r.bytes_read, options.chunk_bytes, why);
  const double warm_resident = resident_fraction(path, r.bytes_read);
  if (std::max(w1, w2) > 0) {
    r.warm_mb_per_s = std::max(w1, w2);
    r.warm_status = warm_resident >= 0 ? fmt::format("measured ({:.1f}% resident)", warm_resident * 100) : "measured";
  } else {
    r.warm_status = "unavailable: " + why;
  }
  if (!cached_before.empty()) evict_pages_not_in(path, cached_before);
  return r;
}

nlohmann::json to_json(const StorageResult& r) {
  return {{"path", r.path},
          {"file_bytes", r.file_bytes},
          {"file_mtime_s", r.file_mtime_s},
          {"bytes_read", r.bytes_read},
          {"cold_mb_per_s", r.cold_available() ? nlohmann::json(r.cold_mb_per_s) : nlohmann::json(nullptr)},
          {"cold_status", r.cold_status},
          {"warm_mb_per_s", r.warm_mb_per_s > 0 ? nlohmann::json(r.warm_mb_per_s) : nlohmann::json(nullptr)},
          {"warm_status", r.warm_status}};
}

StorageResult storage_from_json(const nlohmann::json& j) {
  StorageResult r;
  r.path = j.value("path", "");
  r.file_bytes = j.value("file_bytes", uint64_t{0});
  r.file_mtime_s = j.value("file_mtime_s", int64_t{0});
  r.bytes_read = j.value("bytes_read", uint64_t{0});
  if (j.contains("cold_mb_per_s") && j["cold_mb_per_s"].is_number()) r.cold_mb_per_s = j["cold_mb_per_s"];
  r.cold_status = j.value("cold_status", "");
  if (j.contains("warm_mb_per_s") && j["warm_mb_per_s"].is_number()) r.warm_mb_per_s = j["warm_mb_per_s"];
  r.warm_status = j.value("warm_status", "");
  return r;
}

}  // namespace edgeprobe::probe
