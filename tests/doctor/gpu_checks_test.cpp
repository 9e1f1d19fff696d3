// doctor's gpu.* findings on evidence put together by hand, in the shapes a bench result
// has on lavapipe (tests/gpu runs them for real): each threshold and estimate pinned.
#include <gtest/gtest.h>

#include "doctor/bench_results.h"
#include "doctor/doctor.h"
#include "doctor/finding.h"

using namespace edgeprobe;
using namespace edgeprobe::doctor;
using nlohmann::json;

namespace {

json backends(const json& devices, const std::string& error = "") {
  return json::array({{{"name", "vulkan"}, {"library", "/lib/libggml-vulkan.so"}, {"error", error}, {"devices", devices}}});
}
const json kOneDevice = json::array({{{"name", "Vulkan0"}, {"description", "Mali-G610"}, {"type", "gpu"}}});

json graph(int n_tokens, int gpu_nodes, uint64_t gpu_bytes, int cpu_nodes, uint64_t cpu_bytes, json cpu_groups) {
  json g = {{"n_tokens", n_tokens}, {"backends", json::array()}, {"cpu_nodes", cpu_groups}};
  if (gpu_nodes) g["backends"].push_back({{"backend", "Vulkan0"}, {"nodes", gpu_nodes}, {"weight_bytes", gpu_bytes}});
  if (cpu_nodes) g["backends"].push_back({{"backend", "CPU"}, {"nodes", cpu_nodes}, {"weight_bytes", cpu_bytes}});
  return g;
}

const json kEmbd = {{"op", "GET_ROWS"}, {"tensor", "embd"}, {"count", 1}, {"weight_bytes", 500}};

Evidence evidence(const json& gpu_backends, const json& placement) {
  Evidence e;
  e.options.model_path = "/m/model.gguf";
  e.options.config.threads = 2;
  e.options.n_prompt = 64;
  e.options.n_gen = 8;
  result::TestResult pp = doctor_test::test_result("pp64", 2, 0, 0);
  pp.placement = result::placement_from_json(placement);
  e.primary.report = doctor_test::bench_report({pp});
  e.primary.report->provenance.engine =
      result::engine_from_json({{"name", "llama.cpp"}, {"kind", "in-process"}, {"gpu_backends", gpu_backends}});
  e.primary.report->provenance.extra["vulkan_devices"] = {
      {"devices", json::array({{{"name", "llvmpipe (LLVM 15.0.6, 256 bits)"}, {"type", "cpu"}}})}};
  return e;
}

std::vector<Finding> gpu_findings(const Evidence& e) {
  std::vector<Finding> all = diagnose(e), out;
  for (const auto& f : all)
    if (f.id.starts_with("gpu.")) out.push_back(f);
  return out;
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const auto& f : findings)
    if (f.id == id) return &f;
  return nullptr;
}

}  // namespace

TEST(GpuChecks, AllLayersOnTheGpuWithOnlyTheEmbeddingOnTheCpuIsQuiet) {
  const json placement = {{"devices", {"Vulkan0 (Mali-G610)"}}, {"layers_offloaded", 5}, {"layers_total", 5},
                          {"prefill", graph(64, 81, 9000, 1, 500, {kEmbd})}, {"decode", graph(1, 81, 9000, 1, 500, {kEmbd})}};
  EXPECT_TRUE(gpu_findings(evidence(backends(kOneDevice), placement)).empty());
}

TEST(GpuChecks, WeightsOnTheCpuWhileTheGpuHeldTheModelAreNamedWithTheirShare) {
  const json groups = json::array({kEmbd,
                                   {{"op", "MUL_MAT"}, {"tensor", "ffn_up"}, {"count", 4}, {"weight_bytes", 3000}},
                                   {{"op", "ROPE"}, {"tensor", "Qcur"}, {"count", 4}, {"weight_bytes", 0}}});
  const json placement = {{"devices", {"Vulkan0 (Mali-G610)"}}, {"layers_offloaded", 5}, {"layers_total", 5},
                          {"weights_moved", {"tensor 'blk.0.ffn_up.weight' (tq1_0) (and 3 others) cannot be used ..."}},
                          {"graph_splits", {{"prefill", 26}, {"decode", 26}}},
                          {"decode", graph(1, 45, 9000, 9, 3500, groups)}};
  const auto findings = gpu_findings(evidence(backends(kOneDevice), placement));
  const Finding* f = find(findings, "gpu.cpu_fallback_ops");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NEAR(f->data["cpu_weight_share"].get<double>(), 3000.0 / 12000.0, 1e-9);  // the embedding left out
  ASSERT_TRUE(f->speedup);
  EXPECT_NEAR(*f->speedup, 1 / (1 - 0.25), 1e-9);
  EXPECT_EQ(f->evidence[0], "MUL_MAT on ffn_up ran on the CPU 4 times (0.0 MiB of weights)");
  EXPECT_EQ(f->affects, "decode");
  // Under 5 % of the weight bytes is not a finding.
  const json small = json::array({kEmbd, {{"op", "MUL_MAT"}, {"tensor", "output"}, {"count", 1}, {"weight_bytes", 400}}});
  json p2 = placement;
  p2["decode"] = graph(1, 80, 9000, 2, 900, small);
  EXPECT_EQ(find(gpu_findings(evidence(backends(kOneDevice), p2)), "gpu.cpu_fallback_ops"), nullptr);
}

TEST(GpuChecks, PrefillOnTheGpuAndDecodeOnTheCpuIsNamed) {
  const json mm = json::array({kEmbd, {{"op", "MUL_MAT"}, {"tensor", "ffn_up"}, {"count", 4}, {"weight_bytes", 9000}}});
  const json placement = {{"devices", {"Vulkan0 (Mali-G610)"}}, {"layers_offloaded", 0}, {"layers_total", 5},
                          // As lavapipe measured it at -ngl 0: the prompt's ops ran on Vulkan0 on weights held
                          // in host memory, which count as the CPU's bytes.
                          {"prefill", graph(64, 64, 0, 18, 9500, {kEmbd})}, {"decode", graph(1, 0, 0, 82, 9500, mm)}};
  const auto findings = gpu_findings(evidence(backends(kOneDevice), placement));
  EXPECT_NE(find(findings, "gpu.decode_on_cpu"), nullptr);
  EXPECT_NE(find(findings, "gpu.not_used"), nullptr);  // no layer offloaded with a device there
}

TEST(GpuChecks, PartialOffloadEstimatesFromTheCpusShareOfTheWeights) {
  const json mm = json::array({kEmbd, {{"op", "MUL_MAT"}, {"tensor", "ffn_up"}, {"count", 2}, {"weight_bytes", 4000}}});
  const json placement = {{"devices", {"Vulkan0 (Mali-G610)"}}, {"layers_offloaded", 3}, {"layers_total", 5},
                          {"decode", graph(1, 50, 6000, 30, 4500, mm)}};
  const auto findings = gpu_findings(evidence(backends(kOneDevice), placement));
  const Finding* f = find(findings, "gpu.partial_offload");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->speedup);
  EXPECT_NEAR(*f->speedup, 1 / (1 - 0.4), 1e-9);
  EXPECT_TRUE(f->speedup_basis.starts_with("estimated: an upper bound")) << f->speedup_basis;
  // The layers -ngl left on the CPU are not a fallback, and a decode on both backends is
  // not "decode on the CPU".
  EXPECT_EQ(find(findings, "gpu.cpu_fallback_ops"), nullptr);
  // What llama.cpp logs for those layers (as lavapipe showed): host memory either way.
  json host = placement;
  host["weights_moved"] = {"tensor 'token_embd.weight' (q4_0) (and 27 others) cannot be used with preferred buffer type "
                           "Vulkan_Host, using CPU instead"};
  EXPECT_EQ(find(gpu_findings(evidence(backends(kOneDevice), host)), "gpu.cpu_fallback_ops"), nullptr);
  // A weight the GPU itself could not hold is a fallback even so.
  host["weights_moved"].push_back("tensor 'blk.4.ffn_up.weight' (tq1_0) cannot be used with preferred buffer type Vulkan0, "
                                  "using CPU instead");
  EXPECT_NE(find(gpu_findings(evidence(backends(kOneDevice), host)), "gpu.cpu_fallback_ops"), nullptr);
  json with_prefill = placement;
  with_prefill["prefill"] = graph(64, 50, 6000, 30, 4500, mm);
  EXPECT_EQ(find(gpu_findings(evidence(backends(kOneDevice), with_prefill)), "gpu.decode_on_cpu"), nullptr);
}

TEST(GpuChecks, ABackendThatFailedToLoadIsNamedWithItsReason) {
  const auto findings = gpu_findings(evidence(backends(json::array(), "libvulkan.so.1: file too short"), {{"devices", json::array()}}));
  const Finding* f = find(findings, "gpu.backend_failed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->evidence[0].find("libvulkan.so.1: file too short"), std::string::npos);
  EXPECT_EQ(find(findings, "gpu.not_used"), nullptr);  // no device: nothing was left unused
}

TEST(GpuChecks, ABackendWithOnlyACpuTypeDeviceSaysWhichItSkipped) {
  const auto findings = gpu_findings(evidence(backends(json::array()), {{"devices", json::array()}}));
  const Finding* f = find(findings, "gpu.no_device");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NE(f->title.find("llvmpipe"), std::string::npos);
}

TEST(GpuChecks, AGpuInSysfsWithNoBackendAtAllIsNotUsed) {
  edgeprobe::telemetry::Gpu mali;
  mali.kind = "mali";
  mali.name = "fb000000.gpu";
  mali.model = "Mali-G610";
  Evidence e = evidence(json::array(), {{"devices", json::array()}});
  e.device.gpus = {mali};
  const auto findings = gpu_findings(e);
  const Finding* f = find(findings, "gpu.no_backend");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(f->evidence[0], "sysfs shows Mali-G610 (fb000000.gpu, mali)");
  // Without a GPU in sysfs a CPU-only build is nothing to name.
  e.device.gpus.clear();
  EXPECT_TRUE(gpu_findings(e).empty());
}

TEST(GpuChecks, OnlyACpuTypeVulkanDeviceBesideARealGpuIsAMissingDriver) {
  edgeprobe::telemetry::Gpu adreno;
  adreno.kind = "kgsl";
  adreno.name = "kgsl-3d0";
  adreno.model = "Adreno740v2";
  Evidence e = evidence(backends(json::array()), {{"devices", json::array()}});
  e.device.gpus = {adreno};
  const auto findings = gpu_findings(e);
  const Finding* f = find(findings, "gpu.no_device");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(f->evidence.back(), "sysfs shows Adreno740v2 (kgsl-3d0, kgsl), which no driver offers");
}
