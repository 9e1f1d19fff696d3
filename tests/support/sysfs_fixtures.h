#pragma once
// The sysfs trees under tests/fixtures/sysfs: phones, boards and servers as their kernels
// show them (tests/fixtures/sysfs/README.md says where each came from).
#include <string>

#include "core/fs.h"

namespace edgeprobe::test_support {

inline std::string sysfs_fixture(const std::string& name) {
  return std::string(EDGEPROBE_TEST_DATA_DIR) + "/fixtures/sysfs/" + name;
}
inline FsRoot sysfs_fixture_root(const std::string& name) { return FsRoot(sysfs_fixture(name)); }

}  // namespace edgeprobe::test_support
