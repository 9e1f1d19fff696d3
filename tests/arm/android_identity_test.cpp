// Android's device names from the property service (getprop) and from build.prop files.
// The getprop fixture is a script at <root>/system/bin/getprop, where Android has the tool.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "core/fs.h"
#include "platform/device_identity.h"
#include "support/run_process.h"
#include "support/sysfs_fixtures.h"

namespace edgeprobe {
namespace {

TEST(AndroidIdentity, GetpropNamesTheModelSocAndVersion) {
  const auto d = platform::detect_device(FsRoot(test_support::sysfs_fixture("android-getprop")));
  EXPECT_EQ(d.os, "Android 15");
  EXPECT_EQ(d.board, "SM-S928B");
  EXPECT_EQ(d.soc, "SM8650");
}

TEST(AndroidIdentity, GetpropWinsOverBuildProp) {
  // The phone tree's build.prop says SM-S911B / SM8550; a getprop beside it says otherwise.
  test_support::TempDir dir;
  const std::filesystem::path root = dir.path();
  std::filesystem::copy(test_support::sysfs_fixture("android-phone-3cluster") + "/system", root / "system", std::filesystem::copy_options::recursive);
  std::filesystem::copy(test_support::sysfs_fixture("android-phone-3cluster") + "/vendor", root / "vendor", std::filesystem::copy_options::recursive);
  std::filesystem::create_directories(root / "system/bin");
  std::filesystem::copy(test_support::sysfs_fixture("android-getprop") + "/system/bin/getprop", root / "system/bin/getprop");
  const auto with_getprop = platform::detect_device(FsRoot(root.string()));
  EXPECT_EQ(with_getprop.board, "SM-S928B");
  EXPECT_EQ(with_getprop.soc, "SM8650");
  std::filesystem::remove(root / "system/bin/getprop");
  const auto build_prop_only = platform::detect_device(FsRoot(root.string()));
  EXPECT_EQ(build_prop_only.board, "SM-S911B");
  EXPECT_EQ(build_prop_only.soc, "SM8550");
}

TEST(AndroidIdentity, AFailingGetpropFallsBackToBuildProp) {
  test_support::TempDir dir;
  const std::filesystem::path root = dir.path();
  std::filesystem::copy(test_support::sysfs_fixture("android-phone-3cluster") + "/system", root / "system", std::filesystem::copy_options::recursive);
  std::filesystem::create_directories(root / "system/bin");
  {
    std::FILE* f = std::fopen((root / "system/bin/getprop").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("#!/bin/sh\necho 'getprop: permission denied' >&2\nexit 1\n", f);
    std::fclose(f);
  }
  std::filesystem::permissions(root / "system/bin/getprop", std::filesystem::perms::owner_all);
  const auto d = platform::detect_device(FsRoot(root.string()));
  EXPECT_EQ(d.board, "SM-S911B");
  EXPECT_EQ(d.os, "Android 14");
}

}  // namespace
}  // namespace edgeprobe
