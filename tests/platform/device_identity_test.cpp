// The device a result names: a stable id and the names a user recognises, read from the
// device's own files (fixture trees stand in for a phone and a Jetson).
#include <gtest/gtest.h>

#include "core/fs.h"
#include "platform/device_identity.h"
#include "support/sysfs_fixtures.h"

using namespace edgeprobe;

namespace {
}  // namespace

TEST(DeviceIdentity, AndroidPhoneIsNamedFromItsBuildProperties) {
  const auto d = platform::detect_device(test_support::sysfs_fixture_root("android-phone-3cluster"));
  EXPECT_EQ(d.os, "Android 14");
  EXPECT_EQ(d.board, "SM-S911B");
  EXPECT_EQ(d.soc, "SM8550");
  EXPECT_EQ(d.id.rfind("dev-", 0), 0u);
  EXPECT_EQ(d.id.size(), 4u + 16u);
}

TEST(DeviceIdentity, JetsonIsNamedFromItsDeviceTree) {
  const auto d = platform::detect_device(test_support::sysfs_fixture_root("jetson-orin"));
  EXPECT_EQ(d.board, "NVIDIA Jetson Orin Nano Developer Kit");
  EXPECT_EQ(d.soc, "nvidia,tegra234");
}

TEST(DeviceIdentity, TheIdIsStableAndDiffersBetweenDevices) {
  const auto phone = platform::detect_device(test_support::sysfs_fixture_root("android-phone-3cluster"));
  EXPECT_EQ(platform::detect_device(test_support::sysfs_fixture_root("android-phone-3cluster")).id, phone.id);
  EXPECT_NE(platform::detect_device(test_support::sysfs_fixture_root("jetson-orin")).id, phone.id);
  const auto here = platform::detect_device(FsRoot("/"));
  EXPECT_EQ(platform::detect_device(FsRoot("/")).id, here.id);
  EXPECT_FALSE(here.arch.empty());
  EXPECT_FALSE(here.cpu_model.empty());
}
