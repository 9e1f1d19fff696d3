// The arm64 bundle under qemu-user: each emulated CPU gets the ggml variant its features
// allow, with only the bundle's own loader and libraries (qemu's sysroot is an empty dir).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/run_process.h"

using edgeprobe::test_support::ProcessResult;
using edgeprobe::test_support::run_process;
using edgeprobe::test_support::TempDir;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string find_qemu() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin"}) {
    const std::string path = std::string(dir) + "/qemu-aarch64";
    if (fs::exists(path)) return path;
  }
  return "";
}

// EDGEPROBE_ARM_BUNDLE, else the newest dist/edgeprobe-*-linux-aarch64-linux-gnu.tar.gz.
std::string find_bundle() {
  if (const char* env = std::getenv("EDGEPROBE_ARM_BUNDLE"); env && *env) return env;
  std::string best;
  fs::file_time_type newest{};
  std::error_code ec;
  for (auto it = fs::directory_iterator(EDGEPROBE_DIST_DIR, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("edgeprobe-") && name.ends_with("-linux-aarch64-linux-gnu.tar.gz") &&
        (best.empty() || it->last_write_time() > newest)) {
      best = it->path().string();
      newest = it->last_write_time();
    }
  }
  return best;
}

class ArmBundle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    qemu_ = find_qemu();
    bundle_ = find_bundle();
    if (qemu_.empty() || bundle_.empty()) return;
    dir_ = new TempDir();
    fs::create_directories(dir_->file("sysroot"));  // empty: no aarch64 libraries but the bundle's
    fs::create_directories(dir_->file("home"));
    const auto r = run_process({"/bin/tar", "-xzf", bundle_, "-C", dir_->path()}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& entry : fs::directory_iterator(dir_->path()))
      if (entry.path().filename().string().starts_with("edgeprobe-")) root_ = entry.path().string();
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (qemu_.empty()) GTEST_SKIP() << "qemu-aarch64 not installed (apt-get install qemu-user)";
    if (bundle_.empty())
      GTEST_SKIP() << "no arm64 bundle in " << EDGEPROBE_DIST_DIR
                   << " (scripts/package.sh --target aarch64-linux-gnu)";
    ASSERT_FALSE(root_.empty()) << bundle_ << " holds no edgeprobe-* directory";
  }

  // The bundle's loader starts the binary, as the launcher does, but without the launcher's
  // environment: the binary must find its CPU variants relative to itself.
  static ProcessResult edgeprobe(const std::string& cpu, const std::vector<std::string>& args) {
    std::vector<std::string> argv{qemu_, "-cpu", cpu, "-L", dir_->file("sysroot"),
                                  root_ + "/lib/ld-linux-aarch64.so.1", "--library-path", root_ + "/lib",
                                  root_ + "/bin/edgeprobe"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, 900, {{"HOME", dir_->file("home")}, {"XDG_CACHE_HOME", dir_->file("home/cache")},
                                   {"XDG_DATA_HOME", dir_->file("home/data")},
                                   {"EDGEPROBE_GGML_BACKEND_DIR", ""}, {"EDGEPROBE_EMULATED", ""}});
  }

  static json bench(const std::string& cpu, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"bench", "-m", "synth:tiny", "-r", "1", "-p", "16", "-n", "4",
                                  "--no-store", "--ceilings", "off", "-o", "json", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = edgeprobe(cpu, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // Under qemu the tool must say its timings are not performance.
    EXPECT_NE(r.err.find("emulation"), std::string::npos) << r.err;
    try {
      return json::parse(r.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "bench output is not JSON: " << e.what() << "\n" << r.out << "\n" << r.err;
      return json::object();
    }
  }

  static std::string variant_of(const json& report) {
    return report.value("/provenance/engine/cpu_variant"_json_pointer, std::string("?"));
  }

  static inline std::string qemu_, bundle_, root_;
  static inline TempDir* dir_ = nullptr;
};

TEST_F(ArmBundle, CortexA53LoadsTheBaselineVariantAndDecodes) {
  const json j = bench("cortex-a53");
  EXPECT_EQ(variant_of(j), "armv8.0_1");  // ARMv8.0: no dotprod, no fp16 arithmetic
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["status"], "ok");
  EXPECT_EQ(j["results"][1]["status"], "ok");
  EXPECT_GT(j["results"][1]["decode"]["tokens_per_s"]["median"].get<double>(), 0);
  EXPECT_EQ(j["provenance"]["emulated"], true);
  const json& cpu = j["provenance"]["cpu_features"];
  EXPECT_EQ(cpu["arch"], "aarch64");
  EXPECT_EQ(cpu["source"], "hwcap");
  EXPECT_EQ(cpu["features"]["NEON"], true);
  EXPECT_EQ(cpu["features"]["DOTPROD"], false);
}

TEST_F(ArmBundle, CortexA76LoadsTheDotprodVariant) {
  const json j = bench("cortex-a76");
  // A76: ARMv8.2 with dotprod and fp16 arithmetic, no SVE.
  EXPECT_EQ(variant_of(j), "armv8.2_2");
  EXPECT_EQ(j["provenance"]["cpu_features"]["features"]["DOTPROD"], true);
  EXPECT_EQ(j["provenance"]["cpu_features"]["features"]["SVE"], false);
  EXPECT_EQ(j["provenance"]["isa_gap"]["fallback"], false);
}

TEST_F(ArmBundle, CortexA76WithTheBaselineForcedShowsTheDotprodGap) {
  const json j = bench("cortex-a76", {"--cpu-variant", "armv8.0_1"});
  EXPECT_EQ(variant_of(j), "armv8.0_1");
  const json& gap = j["provenance"]["isa_gap"];
  EXPECT_EQ(gap["fallback"], true);
  EXPECT_EQ(gap["best_variant"], "armv8.2_2");
  const auto unused = gap["unused_features"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(unused.begin(), unused.end(), "DOTPROD"), unused.end()) << gap.dump();
}

TEST_F(ArmBundle, MaxLoadsTheBestVariantInTheBundle) {
  const json j = bench("max");
  // qemu's "max" has SVE2 and i8mm; the armv9.2 (SME) variants are not in a g++ 12 build.
  EXPECT_EQ(variant_of(j), "armv8.6_2");
  EXPECT_EQ(j["provenance"]["cpu_features"]["features"]["I8MM"], true);
  EXPECT_EQ(j["provenance"]["cpu_features"]["features"]["SVE2"], true);
}

TEST_F(ArmBundle, UnknownCpuVariantListsTheInstalledOnesAndExits2) {
  const auto r = edgeprobe("cortex-a53", {"bench", "-m", "synth:tiny", "-r", "1", "-p", "16", "-n", "4",
                                          "--no-store", "--ceilings", "off", "--cpu-variant", "haswell"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown CPU variant 'haswell'"), std::string::npos) << r.err;
  for (const char* v : {"armv8.0_1", "armv8.2_1", "armv8.2_2", "armv8.2_3", "armv8.6_1", "armv8.6_2"})
    EXPECT_NE(r.err.find(v), std::string::npos) << v << " not listed in: " << r.err;
}

TEST_F(ArmBundle, VariantTheCpuLacksIsRefusedWithExit2) {
  const auto r = edgeprobe("cortex-a53", {"bench", "-m", "synth:tiny", "-r", "1", "-p", "16", "-n", "4",
                                          "--no-store", "--ceilings", "off", "--cpu-variant", "armv8.2_1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("needs instructions this CPU lacks"), std::string::npos) << r.err;
}

}  // namespace
