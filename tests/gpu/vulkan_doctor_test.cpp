// doctor measures the GPU against the CPU for real: on lavapipe (Vulkan shaders run on this
// machine's CPU, far slower than ggml's CPU kernels) the pairs must find the CPU faster, as
// a Mali or Adreno often is (docs/gpu.md). The factor is lavapipe's, not a phone's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_process.h"

using edgeprobe::test_support::run_process;
using edgeprobe::test_support::tiny_model;
using nlohmann::json;

TEST(VulkanDoctor, TheGpuSlowerThanTheCpuIsMeasuredInPairs) {
  const auto r = run_process({EDGEPROBE_BINARY, "doctor", "-m", tiny_model(), "-t", "1", "-p", "32", "-n", "8", "-r", "1",
                              "--budget", "120", "--no-store", "-o", "json", "-q"},
                             600, {{"GGML_VK_VISIBLE_DEVICES", "0"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json d = json::parse(r.out)["doctor"];
  bool vulkan_ran = false;
  for (const auto& c : d["comparisons"]) vulkan_ran = vulkan_ran || c["what"] == "gpu";
  if (!vulkan_ran) GTEST_SKIP() << "no Vulkan device here (no lavapipe, or a build without Vulkan)";
  json found;
  for (const auto& f : d["findings"])
    if (f["id"] == "gpu.slower_than_cpu") found = f;
  ASSERT_TRUE(found.is_object()) << d["findings"].dump(1);
  EXPECT_EQ(found["speedup_basis"], "measured");
  // lavapipe runs this model tens of times slower than ggml's CPU kernels: the interval of
  // the paired ratios lies far above 1 even on a noisy machine.
  EXPECT_GT(found["speedup"].get<double>(), 3.0) << found.dump(1);
  EXPECT_GT(found["data"]["measured"]["estimate"]["low"].get<double>(), 1.0) << found.dump(1);
}
