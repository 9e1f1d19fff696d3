#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace edgeprobe::telemetry::testing {

inline std::string fixture(const std::string& name) {
  return std::string(EDGEPROBE_TEST_DATA_DIR) + "/fixtures/sysfs/" + name;
}

// A scratch root under the system temp dir, removed at the end of the test.
class ScratchRoot {
 public:
  explicit ScratchRoot(const std::string& tag) {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("edgeprobe-telemetry-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~ScratchRoot() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path() const { return dir_.string(); }
  // Writes (or overwrites in place, keeping the inode like sysfs) root/<rel>.
  void write(const std::string& rel, const std::string& content) const {
    const auto file = dir_ / std::filesystem::path(rel).relative_path();
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << content << "\n";
  }
  // Copies every file of a tree over this root, in place.
  void overlay(const std::string& from) const {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(from)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      const auto rel = std::filesystem::relative(entry.path(), from);
      const auto file = dir_ / rel;
      std::filesystem::create_directories(file.parent_path());
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out << text.str();
    }
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace edgeprobe::telemetry::testing
