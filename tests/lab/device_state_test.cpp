// What a device says about itself (the probe script's key=value lines), and the lab
// hygiene settings.
#include "lab/device_state.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/fs.h"
#include "lab/lab_run.h"
#include "core/subprocess.h"
#include "platform/device_identity.h"

using namespace edgeprobe;
using namespace edgeprobe::lab;

TEST(DeviceState, ParsesAPhonesAnswer) {
  // As a Pixel answers through adb's old pty shell (CR LF line ends): identity facts first,
  // named by the rule the phone's own runs use.
  const std::string out =
      "id.kernel=Linux 5.10.177 aarch64\r\nid.arch=aarch64\r\nid.hostname=localhost\r\n"
      "id.prop=ro.build.version.release=14\r\nid.prop=ro.product.model=Pixel 8\r\n"
      "id.prop=ro.soc.model=Tensor G3\r\nid.prop=ro.serialno=3A1B\r\n"
      "id.build_prop=ro.soc.model=not-this-one\r\n"
      "id.cpuinfo=CPU implementer\t: 0x41\r\nid.cpuinfo=CPU part\t: 0xd46\r\n"
      "id.cpuinfo=CPU implementer\t: 0x41\r\nid.cpuinfo=CPU part\t: 0xd4d\r\n"
      "cpus=9\r\n"
      "bundle=edgeprobe-0.1.0-linux-aarch64-linux-gnu\r\nfree_kb=51234567\r\nbattery_pct=81\r\nbattery_dc="
      "312\r\n"
      "zone=38000\r\nzone=-273000\r\nzone=45500\r\nzone=-22\r\nrooted=su\r\n"
      "cpufreq=policy0 schedutil 1197000 324000 1704000 1704000\r\n"
      "cpufreq=policy4 schedutil 2367000 402000 2000000 2367000\r\nend=1\r\n";
  const DeviceState s = parse_state(out);
  ASSERT_TRUE(s.reachable);
  EXPECT_EQ(s.target, "aarch64-linux-gnu");
  EXPECT_EQ(s.kernel, "Linux 5.10.177 aarch64");
  EXPECT_EQ(s.os, "Android 14");
  EXPECT_EQ(s.soc, "Tensor G3");  // getprop's answer wins over build.prop's
  EXPECT_EQ(s.board, "Pixel 8");
  EXPECT_EQ(s.cpu, "1x Cortex-A510 + 1x Cortex-A715");
  EXPECT_EQ(s.device_id, platform::device_id_from("3A1B", s.cpu));  // the serial, as on the phone
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

TEST(DeviceState, ZonesInWholeOrTenthDegreesReadAsTheSamplerReadsThem) {
  // Some vendors' zones report whole or tenth degrees; the old probe dropped them.
  EXPECT_DOUBLE_EQ(*parse_state("id.arch=aarch64\nzone=52\nend=1\n").max_temp_c, 52);
  EXPECT_DOUBLE_EQ(*parse_state("id.arch=aarch64\nzone=415\nzone=39000\nend=1\n").max_temp_c, 41.5);
  EXPECT_FALSE(parse_state("id.arch=aarch64\nzone=-273000\nzone=999999\nend=1\n").max_temp_c);
}

// The lab's probe and a run on the same machine name it alike: the script through a real
// sh here, against what this process reads itself.
TEST(DeviceState, TheProbeNamesThisMachineAsItsOwnRunsDo) {
  const auto r = run_subprocess({"sh", "-c", state_script("/nonexistent")}, within(30));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DeviceState s = parse_state(r.out);
  ASSERT_TRUE(s.reachable) << r.out;
  const platform::DeviceIdentity here = platform::detect_device(FsRoot("/"));
  EXPECT_EQ(s.device_id, here.id);
  EXPECT_EQ(s.arch, here.arch);
  EXPECT_EQ(s.kernel, here.kernel);
  EXPECT_EQ(s.os, here.os);
  EXPECT_EQ(s.board, here.board);
  EXPECT_EQ(s.soc, here.soc);
  EXPECT_EQ(s.cpu, here.cpu_model);
}

TEST(DeviceState, PinnedWhenMinEqualsMaxOrPerformance) {
  DeviceState s = parse_state(
      "id.arch=x86_64\ncpufreq=policy0 userspace 1800000 1800000 1800000 3000000\n"
      "cpufreq=policy1 performance 3000000 800000 3000000 3000000\nend=1\n");
  EXPECT_TRUE(s.pinned());
  EXPECT_FALSE(s.capped());  // a userspace pin below the maximum is the user's choice
  EXPECT_FALSE(parse_state("id.arch=x86_64\nend=1\n").pinned());  // no cpufreq: unknown, not pinned
}

TEST(DeviceState, ACutAnswerIsNotReachable) {
  const DeviceState s = parse_state("id.arch=aarch64\nid.kernel=Linux 5.10 aarch64\n");
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
