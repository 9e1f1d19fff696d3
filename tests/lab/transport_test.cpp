// The ssh and scp command lines the transport builds: whatever an inventory (or a stored
// lab run) holds, it comes after "--", so ssh never reads it as an option; and a real ssh
// given such a host runs nothing.
#include "lab/transport.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"

using namespace edgeprobe;
using namespace edgeprobe::lab;
namespace fs = std::filesystem;

namespace {

struct TempDirectory {
  std::string path;
  TempDirectory() {
    std::string t = (fs::temp_directory_path() / "ep-transport-XXXXXX").string();
    path = mkdtemp(t.data());
  }
  ~TempDirectory() { fs::remove_all(path); }
};

Device hostile_ssh_device(const std::string& marker) {
  Device d;
  d.name = "x";
  d.transport = "ssh";
  d.host = "-oProxyCommand=touch " + marker;
  d.user = "-oLocalCommand=touch " + marker;
  return d;
}

// Everything before "--" is the program and options this code chose.
void expect_after_double_dash(const std::vector<std::string>& argv, const std::string& outside) {
  const auto dash = std::find(argv.begin(), argv.end(), "--");
  ASSERT_NE(dash, argv.end());
  const auto at = std::find_if(argv.begin(), argv.end(),
                               [&](const std::string& a) { return a.find(outside) != std::string::npos; });
  ASSERT_NE(at, argv.end());
  EXPECT_GT(at - argv.begin(), dash - argv.begin()) << outside;
}

}  // namespace

TEST(SshArgv, InventoryTextComesAfterDoubleDash) {
  const Device d = hostile_ssh_device("/tmp/never");
  const auto ssh = ssh_command_argv(d, "/tmp/ctl", "uname -m");
  expect_after_double_dash(ssh, "-oProxyCommand");
  EXPECT_EQ(ssh.back(), "uname -m");
  EXPECT_EQ(*(ssh.end() - 2), d.host);
  // The user rides inside one "-o User=..." word: a value, never an option of its own.
  EXPECT_NE(std::find(ssh.begin(), ssh.end(), "User=" + d.user), ssh.end());
  const auto scp = scp_argv(d, "/tmp/ctl", {"/tmp/local", d.host + ":'/remote'"});
  expect_after_double_dash(scp, "-oProxyCommand");
  expect_after_double_dash(scp, "/tmp/local");
}

TEST(SshArgv, TheTransportRefusesOptionLikeFieldsWhateverTheirSource) {
  // A device read back from a stored lab run skips the inventory's checks: the transport checks again.
  for (auto field : {&Device::name, &Device::host, &Device::user, &Device::serial}) {
    Device d;
    d.name = "ok";
    d.transport = field == &Device::serial ? "adb" : "ssh";
    d.host = "h";
    d.serial = "s";
    d.*field = "-oProxyCommand=touch /tmp/x";
    try {
      make_transport(d);
      ADD_FAILURE() << "accepted " << d.*field;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(std::string(e.what()).find("begins with '-'"), std::string::npos) << e.what();
    }
  }
}

TEST(SshArgv, ARealSshGivenAnOptionLikeHostRunsNothing) {
  if (access("/usr/bin/ssh", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/ssh (apt-get install openssh-client)";
  TempDirectory tmp;
  const std::string marker = tmp.path + "/pwned";
  const Device d = hostile_ssh_device(marker);
  const auto r = run_subprocess(ssh_command_argv(d, tmp.path, "true"), within(30));
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(marker)) << "ssh ran the inventory's ProxyCommand";
}
