// What a device says about itself (the probe script's key=value lines), and the lab
// hygiene settings.
#include "lab/device_state.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "lab/lab_run.h"

using namespace edgeprobe;
using namespace edgeprobe::lab;

TEST(DeviceState, ParsesAPhonesAnswer) {
  // As a Pixel answers through adb's old pty shell (CR LF line ends).
  const std::string out =
      "arch=aarch64\r\nkernel=5.10.177\r\nos=Android 14\r\nsoc=Tensor G3\r\ncpu=\r\ncpus=9\r\n"
      "bundle=edgeprobe-0.1.0-linux-aarch64-linux-gnu\r\nfree_kb=51234567\r\nbattery_pct=81\r\nbattery_dc="
      "312\r\n"
      "zone_mc=38000\r\nzone_mc=-273000\r\nzone_mc=45500\r\nrooted=su\r\n"
      "cpufreq=policy0 schedutil 1197000 324000 1704000 1704000\r\n"
      "cpufreq=policy4 schedutil 2367000 402000 2000000 2367000\r\nend=1\r\n";
  const DeviceState s = parse_state(out);
  ASSERT_TRUE(s.reachable);
  EXPECT_EQ(s.target, "aarch64-linux-gnu");
  EXPECT_EQ(s.os, "Android 14");
  EXPECT_EQ(s.soc, "Tensor G3");
  EXPECT_EQ(s.cpus, 9);
  EXPECT_EQ(s.bundles, std::vector<std::string>{"edgeprobe-0.1.0-linux-aarch64-linux-gnu"});
  EXPECT_EQ(*s.free_kb, 51234567);
  EXPECT_EQ(*s.battery_pct, 81);
  EXPECT_DOUBLE_EQ(*s.battery_c, 31.2);
  EXPECT_DOUBLE_EQ(*s.max_temp_c, 45.5);  // the bogus -273 C zone is ignored
  EXPECT_EQ(s.rooted, "su");
  ASSERT_EQ(s.cpufreq.size(), 2u);
  EXPECT_FALSE(s.pinned());
  EXPECT_TRUE(s.capped());  // policy4 held at 2.0 of 2.367 GHz
}

TEST(DeviceState, PinnedWhenMinEqualsMaxOrPerformance) {
  DeviceState s = parse_state(
      "arch=x86_64\ncpufreq=policy0 userspace 1800000 1800000 1800000 3000000\n"
      "cpufreq=policy1 performance 3000000 800000 3000000 3000000\nend=1\n");
  EXPECT_TRUE(s.pinned());
  EXPECT_FALSE(s.capped());  // a userspace pin below the maximum is the user's choice
  EXPECT_FALSE(parse_state("arch=x86_64\nend=1\n").pinned());  // no cpufreq: unknown, not pinned
}

TEST(DeviceState, ACutAnswerIsNotReachable) {
  const DeviceState s = parse_state("arch=aarch64\nkernel=5.10\n");
  EXPECT_FALSE(s.reachable);
  EXPECT_EQ(s.why_not, "the device's probe ended early");
  EXPECT_EQ(target_of_arch("arm64"), "aarch64-linux-gnu");
  EXPECT_EQ(target_of_arch("armv7l"), "");
}

TEST(Cooldown, ParsesSecondsOrATemperature) {
  EXPECT_EQ(Cooldown::parse("").seconds, 0);
  EXPECT_EQ(Cooldown::parse("none").seconds, 0);
  EXPECT_EQ(Cooldown::parse("30").seconds, 30);
  EXPECT_EQ(*Cooldown::parse("temp:42.5").until_c, 42.5);
  for (const char* bad : {"-1", "abc", "temp:", "temp:500", "30s", "7200"})
    EXPECT_THROW(Cooldown::parse(bad), Error) << bad;
}
