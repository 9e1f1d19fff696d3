#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "telemetry/sampler.h"
#include "support/sysfs_fixtures.h"
#include "telemetry/timeline.h"

namespace edgeprobe::telemetry::testing {

inline std::string fixture(const std::string& name) { return test_support::sysfs_fixture(name); }

// The value of one series at one sample; NaN and a test failure when there is no such series.
inline double value_of(const Timeline& tl, const std::string& series, size_t sample = 0) {
  const auto s = tl.find(series);
  if (!s) {
    ADD_FAILURE() << "no series " << series;
    return std::nan("");
  }
  return tl.values[*s][sample];
}

// One sample of everything the sampler finds under `root`, at time 0.
inline Timeline sample_once(const std::string& root) {
  Sampler sampler({.hz = 10, .sysfs_root = root, .pid = 0}, RunClock());
  sampler.sample_at(0);
  return sampler.timeline();
}

inline bool contains(const std::vector<std::string>& lines, const std::string& needle) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; });
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
