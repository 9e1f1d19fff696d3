#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace edgeprobe::telemetry {

// A sysfs/procfs file read again and again by the sampler. The descriptor stays open and
// each read is one pread() at offset 0, which makes sysfs and seq_file-backed procfs
// regenerate the content (Documentation/filesystems/sysfs.rst), so a tick costs one
// syscall per file and no allocation once the buffer has grown to fit.
class CachedFile {
 public:
  CachedFile() = default;
  explicit CachedFile(std::string full_path) : path_(std::move(full_path)) {}
  CachedFile(const CachedFile&) = delete;
  CachedFile& operator=(const CachedFile&) = delete;
  CachedFile(CachedFile&& other) noexcept;
  CachedFile& operator=(CachedFile&& other) noexcept;
  ~CachedFile();

  const std::string& path() const { return path_; }
  // The whole content, trailing whitespace trimmed; empty view on failure (see error()).
  // The view lives until the next read.
  std::string_view read();
  bool read_int(long long* out);
  // Why the last read failed: "absent", "permission denied", ...
  const std::string& error() const { return error_; }
  bool failed() const { return !error_.empty(); }

 private:
  void close_fd();
  std::string path_;
  int fd_ = -1;
  std::string buffer_;
  std::string error_;
};

// Whitespace-separated integer parsing without allocation.
bool parse_ll(std::string_view text, long long* out);
// Splits off the next whitespace-separated token; empty when none is left.
std::string_view next_token(std::string_view* text);
// "0-3,6,8-9" -> {0,1,2,3,6,8,9}; also accepts space-separated lists (related_cpus).
std::vector<int> parse_cpu_list(std::string_view text);
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace edgeprobe::telemetry
