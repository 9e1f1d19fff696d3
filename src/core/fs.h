#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace edgeprobe {

// Reads system files (sysfs, procfs) under a root prefix, so that a fixture tree can
// stand in for a phone or a Jetson this machine is not (--sysfs-root). Absent or denied
// files are normal on real devices (Android's SELinux denies apps the thermal nodes),
// so reads return nullopt and say why through last_error() rather than throw.
class FsRoot {
 public:
  explicit FsRoot(std::string root = "/");

  const std::string& root() const { return root_; }
  // "/sys/class/thermal" -> "<root>/sys/class/thermal"
  std::string path(const std::string& absolute) const;

  std::optional<std::string> read_text(const std::string& absolute) const;  // trailing newline trimmed
  std::optional<int64_t> read_int(const std::string& absolute) const;
  bool exists(const std::string& absolute) const;
  // Names in a directory, sorted; empty when absent.
  std::vector<std::string> list_dir(const std::string& absolute) const;
  // Why the last read failed ("absent", "permission denied", "not a number: ..."), for
  // "unavailable: <reason>" reports.
  const std::string& last_error() const { return last_error_; }

 private:
  std::string root_;
  mutable std::string last_error_;
};

// Reads a whole file (binary safe); throws edgeprobe::Error(kBadInput) when unreadable.
std::string read_file_or_throw(const std::string& path, const char* what);

}  // namespace edgeprobe
