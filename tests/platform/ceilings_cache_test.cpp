// The ceilings cache: a JSON round trip keeps every figure, and a cached file for this
// device and build is served without measuring.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "probe/ceilings.h"
#include "report/device_reporters.h"

namespace edgeprobe::probe {
namespace {

DeviceCeilings sample() {
  DeviceCeilings c;
  c.device_key = "dev";
  c.build_key = "build";
  c.cpu_model = "Test CPU";
  c.threads = 2;
  c.llc_total_bytes = 32u << 20;
  c.bandwidth.buffer_bytes = 1u << 30;
  c.bandwidth.kernel_isa = "avx2";
  c.bandwidth.huge_page_share = 0.75;
  c.bandwidth.read_best_gb_per_s = 17.5;
  c.bandwidth.read_median_gb_per_s = 16.0;
  c.bandwidth.points.push_back({"read", "device", 2, {0, 1}, 17.5, 16.0, 6});
  c.compute_status = "measured";
  ComputePoint p;
  p.type = "q4_0";
  p.threads = 2;
  p.best_gflop_per_s = 101.0;
  p.weight_buffer = "CPU_REPACK";
  c.compute.points.push_back(p);
  StorageResult s;
  s.path = "/m.gguf";
  s.cold_status = "unavailable: test";
  s.warm_mb_per_s = 9000;
  c.storage = s;
  KernelPoint k;
  k.phase = "decode";
  k.model = "q4_0:2048x2048x44";
  k.type = "q4_0";
  k.tokens = 1;
  k.threads = 2;
  k.matrices = 44;
  k.weight_bytes = k.model_bytes = 103'809'024;
  k.best_gb_per_s = 30.5;
  k.median_gb_per_s = 28.0;
  k.weight_memory = "mapped file";
  c.kernels.push_back(k);
  // The same point measured again with a better best run but a worse median: the lookup
  // serves the point whose median (the decode ceiling) is higher.
  KernelPoint lucky = k;
  lucky.best_gb_per_s = 40.0;
  lucky.median_gb_per_s = 20.0;
  c.kernels.push_back(lucky);
  StepCosts sc;
  sc.threads = 2;
  sc.method = 2;
  sc.decode_attention_ns = 0.2;
  sc.prefill_attention_ns = 0.04;
  c.step_costs.push_back(sc);
  return c;
}

TEST(CeilingsCache, JsonRoundTripKeepsEveryFigure) {
  const DeviceCeilings back = ceilings_from_json(to_json(sample()));
  EXPECT_EQ(to_json(back), to_json(sample()));
  EXPECT_DOUBLE_EQ(back.bandwidth_gb_per_s(), 17.5);
  EXPECT_DOUBLE_EQ(back.bandwidth.read_gb_per_s_at(2), 17.5);
  EXPECT_DOUBLE_EQ(back.bandwidth.read_median_gb_per_s, 16.0);
  EXPECT_DOUBLE_EQ(back.bandwidth.read_median_gb_per_s_at(2), 16.0);
  EXPECT_EQ(back.bandwidth.kernel_isa, "avx2");
  ASSERT_TRUE(back.bandwidth.huge_page_share.has_value());
  EXPECT_DOUBLE_EQ(*back.bandwidth.huge_page_share, 0.75);
  EXPECT_DOUBLE_EQ(back.compute.gflop_per_s("q4_0"), 101.0);
  ASSERT_TRUE(back.storage.has_value());
  EXPECT_FALSE(back.storage->cold_available());
  EXPECT_TRUE(to_json(back)["storage"]["cold_mb_per_s"].is_null());
  ASSERT_NE(back.decode_kernel("q4_0:2048x2048x44", 2), nullptr);
  EXPECT_DOUBLE_EQ(back.decode_kernel("q4_0:2048x2048x44", 2)->best_gb_per_s, 30.5);
  EXPECT_DOUBLE_EQ(back.decode_kernel("q4_0:2048x2048x44", 2)->decode_ceiling_gb_per_s(), 28.0);
  EXPECT_EQ(back.decode_kernel("q4_0:2048x2048x44", 1), nullptr);
  EXPECT_EQ(back.kernels[0].weight_memory, "mapped file");
  ASSERT_NE(back.step_cost(2), nullptr);
  EXPECT_EQ(back.step_cost(2)->method, 2);
}

// Figures cached before a point said where its weights lay, or how its step costs were
// measured, read as what they were: an allocation, the first method (both measured again).
TEST(CeilingsCache, PointsAndStepCostsFromBeforeTheirMethodWasRecordedReadAsTheOldOne) {
  auto j = to_json(sample());
  for (auto& k : j["model_kernels"]) k.erase("weight_memory");
  for (auto& sc : j["step_costs"]) sc.erase("method");
  const DeviceCeilings back = ceilings_from_json(j);
  EXPECT_EQ(back.kernels[0].weight_memory, "");
  ASSERT_NE(back.step_cost(2), nullptr);
  EXPECT_EQ(back.step_cost(2)->method, 1);
}

TEST(CeilingsCache, ACacheFromBeforeModelKernelsIsServedWithNone) {
  const std::string dir = ::testing::TempDir() + "/edgeprobe-ceilings-cache-old";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ProbeOptions o;
  o.measure_compute = false;
  o.cache_dir = dir;
  const std::string path = dir + "/" + device_key("/") + "__" + build_key("") + ".json";
  auto j = to_json(sample());
  j.erase("model_kernels");  // as written by the first version of the probe
  j["storage"] = nullptr;
  std::ofstream(path) << j.dump();
  const DeviceCeilings c = load_or_measure(o, false);
  EXPECT_TRUE(c.from_cache);
  EXPECT_TRUE(c.kernels.empty());
  EXPECT_DOUBLE_EQ(c.bandwidth_gb_per_s(), 17.5);
  std::filesystem::remove_all(dir);
}

TEST(CeilingsCache, CachedFileForThisDeviceAndBuildIsServedWithoutMeasuring) {
  const std::string dir = ::testing::TempDir() + "/edgeprobe-ceilings-cache";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ProbeOptions o;
  o.measure_compute = false;  // no backend: the build key says "default"
  o.cache_dir = dir;
  const std::string path = dir + "/" + device_key("/") + "__" + build_key("") + ".json";
  auto j = to_json(sample());
  j["storage"] = nullptr;
  std::ofstream(path) << j.dump();
  const DeviceCeilings c = load_or_measure(o, false);
  EXPECT_TRUE(c.from_cache);
  EXPECT_EQ(c.cache_path, path);
  EXPECT_DOUBLE_EQ(c.bandwidth_gb_per_s(), 17.5);  // the planted figure, not a measurement
  std::filesystem::remove_all(dir);
}

// Two processes that read the cache once, then each add their own kernel points and save
// after each one (a bench and a probe at the same time), lose none of each other's points.
TEST(CeilingsCache, TwoProcessesSavingAtOnceKeepEachOthersPoints) {
  const std::string dir = ::testing::TempDir() + "/edgeprobe-ceilings-cache-race";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  DeviceCeilings start = sample();
  start.cache_path = dir + "/cache.json";
  save_cache(start);
  constexpr int kPoints = 25;
  std::vector<pid_t> children;
  for (int child = 0; child < 2; ++child) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      DeviceCeilings mine = start;  // as read before the other process wrote anything
      for (int i = 0; i < kPoints; ++i) {
        KernelPoint k = start.kernels[0];
        k.phase = "prefill";
        k.tokens = 1000 * (child + 1) + i;
        mine.kernels.push_back(k);
        save_cache(mine);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::ifstream in(start.cache_path);
  const DeviceCeilings back = ceilings_from_json(nlohmann::json::parse(in));
  int prefill = 0;
  for (const auto& k : back.kernels) prefill += k.phase == "prefill";
  EXPECT_EQ(prefill, 2 * kPoints) << "a point saved by one process was lost by the other's save";
  EXPECT_EQ(back.kernels.size(), start.kernels.size() + 2 * kPoints);
  std::filesystem::remove_all(dir);
}

TEST(CeilingsCache, KeysAreStableAndFileNameSafe) {
  EXPECT_EQ(device_key("/"), device_key("/"));
  const std::string k = device_key("/") + build_key("haswell");
  EXPECT_EQ(k.find('/'), std::string::npos);
  EXPECT_EQ(k.find(' '), std::string::npos);
  EXPECT_NE(build_key("haswell"), build_key("zen4"));
}

// A GPU's figures (probe --gpu) travel inside the host's, one entry per device.
TEST(CeilingsCache, GpuEntriesRoundTripAndAViewCarriesTheHostsStorage) {
  DeviceCeilings host = sample();
  DeviceCeilings gpu;
  gpu.device = "Vulkan0";
  gpu.device_description = "llvmpipe (LLVM 15.0.6, 256 bits)";
  gpu.memory_bytes = 2ull << 30;
  gpu.bandwidth.points.push_back({"read", "device", 0, {}, 3.1, 3.0, 5});
  summarize_points(gpu.bandwidth);
  gpu.compute_status = "measured";
  gpu.compute.variant = "Vulkan0";
  KernelPoint missing;
  missing.phase = "prefill";
  missing.type = "tq1_0";
  missing.error = "Vulkan0 has no tq1_0 matmul kernel (llama.cpp runs it on the CPU)";
  gpu.kernels.push_back(missing);
  host.gpus.push_back(gpu);

  const DeviceCeilings back = ceilings_from_json(to_json(host));
  EXPECT_EQ(to_json(back), to_json(host));
  ASSERT_EQ(back.gpus.size(), 1u);
  ASSERT_NE(back.gpu("Vulkan0"), nullptr);
  EXPECT_EQ(back.gpu("Vulkan1"), nullptr);
  EXPECT_EQ(back.gpu("Vulkan0")->device_description, "llvmpipe (LLVM 15.0.6, 256 bits)");
  EXPECT_DOUBLE_EQ(back.gpu("Vulkan0")->bandwidth.read_median_gb_per_s, 3.0);
  EXPECT_EQ(back.gpu("Vulkan0")->kernels.at(0).error, missing.error);
  EXPECT_TRUE(to_json(back)["gpus"][0].value("gpus", nlohmann::json()).is_null());  // one level only

  const auto view = gpu_view(back, "Vulkan0");
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->device, "Vulkan0");
  ASSERT_TRUE(view->storage.has_value());  // the host reads the file before it is uploaded
  EXPECT_EQ(view->storage->path, "/m.gguf");
  EXPECT_EQ(view->device_key, "dev");
  EXPECT_FALSE(gpu_view(back, "CUDA0").has_value());
}

// A driver's description is outside text: the report gives it one line.
TEST(CeilingsCache, AGpusDescriptionIsOneLineInTheText) {
  DeviceCeilings host = sample();
  DeviceCeilings gpu;
  gpu.device = "Vulkan0";
  gpu.device_description = "Mali\nfake line\x1b[2J";
  host.gpus.push_back(gpu);
  const std::string text = report::to_text(host);
  const size_t at = text.find("GPU Vulkan0 (");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(line.find("fake line"), std::string::npos) << line;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

TEST(CeilingsCache, ACpuRefreshKeepsTheStoredGpuFigures) {
  DeviceCeilings stored = sample();
  DeviceCeilings gpu;
  gpu.device = "Vulkan0";
  stored.gpus.push_back(gpu);
  const DeviceCeilings refreshed = keep_higher(stored, sample());
  ASSERT_EQ(refreshed.gpus.size(), 1u);
  EXPECT_EQ(refreshed.gpus[0].device, "Vulkan0");
}

}  // namespace
}  // namespace edgeprobe::probe
