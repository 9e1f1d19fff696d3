// GPU offload through the real binary on Mesa's lavapipe: a Vulkan device that computes on
// this machine's CPU, so placement, fallbacks and their findings are real while speeds are
// not a GPU's (docs/gpu.md). Tiny synthesized models keep each run to seconds.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "support/run_process.h"

using edgeprobe::test_support::ProcessResult;
using edgeprobe::test_support::run_process;
using edgeprobe::test_support::TempDir;
using edgeprobe::test_support::tiny_model;
using nlohmann::json;

namespace {

using Env = std::vector<std::pair<std::string, std::string>>;
const Env kLavapipe{{"GGML_VK_VISIBLE_DEVICES", "0"}};

ProcessResult run_edgeprobe_with(std::vector<std::string> args, const Env& env, int timeout_s = 300) {
  args.insert(args.begin(), EDGEPROBE_BINARY);
  return run_process(args, timeout_s, env);
}

// The Vulkan backend library beside the CPU variants, and lavapipe under it: else skip,
// saying which is missing (a build without Vulkan, a machine without Mesa's driver).
std::string vulkan_missing() {
  const auto r = run_edgeprobe_with({"bench", "-m", tiny_model(), "-p", "0", "-n", "1", "-r", "1", "--no-warmup", "--no-store",
                            "--sample-hz", "0", "--ceilings", "off", "-o", "json", "-q"},
                           kLavapipe);
  if (r.exit_code != 0) return "bench failed: " + r.err;
  const json gpus = json::parse(r.out)["provenance"]["engine"].value("gpu_backends", json::array());
  for (const auto& g : gpus)
    if (g["name"] == "vulkan") return g["devices"].empty() ? "the Vulkan backend finds no device (no lavapipe?)" : "";
  return "no libggml-vulkan.so beside the CPU variants (a llama.cpp build without Vulkan)";
}

#define SKIP_WITHOUT_LAVAPIPE()                              \
  do {                                                       \
    static const std::string missing = vulkan_missing();     \
    if (!missing.empty()) GTEST_SKIP() << missing;           \
  } while (0)

json bench(const std::vector<std::string>& extra, const Env& env = kLavapipe) {
  std::vector<std::string> args{"bench", "-p", "64", "-n", "8", "-r", "1", "-t", "1", "--no-store",
                                "--sample-hz", "0", "--ceilings", "off", "-o", "json", "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_edgeprobe_with(args, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json();
}

const json& result_of(const json& report, const std::string& test, int ngl, bool op_offload = true) {
  for (const auto& r : report["results"])
    if (r["test"] == test && r["config"].value("n_gpu_layers", 0) == ngl &&
        r["config"].value("op_offload", true) == op_offload)
      return r;
  static const json none;
  ADD_FAILURE() << "no " << test << " at -ngl " << ngl << " op_offload " << op_offload;
  return none;
}

// Nodes a graph ran on a backend.
int nodes_on(const json& graph, const std::string& backend) {
  int n = 0;
  for (const auto& b : graph["backends"])
    if (b["backend"] == backend) n += b["nodes"].get<int>();
  return n;
}

bool ran_matmul_on_cpu(const json& graph) {
  for (const auto& n : graph["cpu_nodes"])
    if (n["op"] == "MUL_MAT") return true;
  return false;
}

}  // namespace

TEST(Vulkan, NglAllRunsTheMatmulsOnVulkanAndNglZeroOnTheCpu) {
  SKIP_WITHOUT_LAVAPIPE();
  const json report = bench({"-m", tiny_model(), "-ngl", "0,99", "-nopo", "0,1"});
  ASSERT_TRUE(report.is_object());
  ASSERT_EQ(report["results"].size(), 8u);  // pp64 and tg8 at 2 x 2 settings

  // -ngl 99: every layer on the GPU; both graphs ran there but for the token embedding
  // lookup, which llama.cpp keeps on the CPU by design.
  for (const char* test : {"pp64", "tg8"}) {
    const json& p = result_of(report, test, 99)["placement"];
    EXPECT_GT(p["layers_total"].get<int>(), 0) << p.dump();
    EXPECT_EQ(p["layers_offloaded"], p["layers_total"]) << p.dump();
    EXPECT_NE(p["devices"][0].get<std::string>().find("Vulkan0"), std::string::npos) << p.dump();
    EXPECT_GT(p["buffers_mib"].value("Vulkan0 model", 0.0), 0.0) << p.dump();
    const json& decode = p["decode"];
    EXPECT_GT(nodes_on(decode, "Vulkan0"), 10 * nodes_on(decode, "CPU")) << decode.dump();
    EXPECT_FALSE(ran_matmul_on_cpu(decode)) << decode.dump();
  }
  EXPECT_FALSE(ran_matmul_on_cpu(result_of(report, "pp64", 99)["placement"]["prefill"]));

  // -ngl 0 -nopo 1: nothing but the CPU, in both graphs.
  for (const char* graph : {"prefill", "decode"}) {
    const json& p = result_of(report, "pp64", 0, false)["placement"];
    EXPECT_EQ(p["layers_offloaded"], 0) << p.dump();
    EXPECT_EQ(nodes_on(p[graph], "Vulkan0"), 0) << p[graph].dump();
    EXPECT_GT(nodes_on(p[graph], "CPU"), 0) << p[graph].dump();
  }
  // -ngl 0 with op offload (llama.cpp's default): the 64-token prefill's matmuls move to the
  // GPU (batches of 32 and more), decode stays on the CPU: the placement says so.
  const json& offload = result_of(report, "pp64", 0, true)["placement"];
  EXPECT_GT(nodes_on(offload["prefill"], "Vulkan0"), 0) << offload["prefill"].dump();
  EXPECT_EQ(nodes_on(offload["decode"], "Vulkan0"), 0) << offload["decode"].dump();
  // A speed on both sides: the runs completed (lavapipe is a CPU; its speed is no GPU's).
  for (const auto& r : report["results"]) EXPECT_EQ(r["status"], "ok") << r.dump();
}

TEST(Vulkan, GreedyTokensAtNglAllAgreeWithTheCpuOnTheFirstTurn) {
  SKIP_WITHOUT_LAVAPIPE();
  const std::vector<std::string> args{"session", "-m", tiny_model("q8_0"), "--rounds", "1", "--conversations", "1",
                                      "--max-tokens", "16", "-t", "1", "--no-store", "--sample-hz", "0", "-o", "json", "-q"};
  const auto gpu = run_edgeprobe_with(args, kLavapipe);
  const auto cpu = run_edgeprobe_with(args, {{"EDGEPROBE_NO_GPU", "1"}});
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const auto tokens = [](const std::string& out) {
    const json j = json::parse(out);
    return j["configs"][0]["turns"][0]["reply_tokens"].get<std::vector<int>>();
  };
  const auto on_gpu = tokens(gpu.out), on_cpu = tokens(cpu.out);
  ASSERT_FALSE(on_gpu.empty());
  ASSERT_FALSE(on_cpu.empty());
  size_t agree = 0;
  while (agree < on_gpu.size() && agree < on_cpu.size() && on_gpu[agree] == on_cpu[agree]) ++agree;
  // The two backends sum in different orders and Vulkan rounds activations through f16,
  // so a near-tie between two logits (common with random weights) may flip later tokens;
  // the first greedy token must agree.
  EXPECT_GE(agree, 1u) << "GPU and CPU disagree from the first token";
  std::cout << "greedy tokens agreeing from the start: " << agree << " of " << on_cpu.size() << "\n";
}

TEST(Vulkan, TernaryWeightsStayOnTheCpuAndDoctorNamesThem) {
  SKIP_WITHOUT_LAVAPIPE();
  // The pinned ggml-vulkan has no TQ1_0 matmul: llama.cpp keeps those weights in host
  // memory (a DEBUG line) and the scheduler runs their matmuls on the CPU.
  const std::string model = tiny_model("tq1_0");
  const json report = bench({"-m", model, "-ngl", "99", "-p", "0"});
  ASSERT_TRUE(report.is_object());
  const json& p = report["results"][0]["placement"];
  EXPECT_EQ(p["layers_offloaded"], p["layers_total"]) << p.dump();
  EXPECT_TRUE(ran_matmul_on_cpu(p["decode"])) << p["decode"].dump();
  ASSERT_FALSE(p["weights_moved"].empty()) << p.dump();
  EXPECT_NE(p["weights_moved"][0].get<std::string>().find("using CPU instead"), std::string::npos) << p.dump();
  EXPECT_GT(p["graph_splits"]["decode"].get<int>(), 2) << p.dump();

  const auto d = run_edgeprobe_with({"doctor", "-m", model, "-t", "1", "-p", "32", "-n", "8", "-r", "1", "--no-experiments",
                            "--no-store", "-o", "json", "-q"},
                           kLavapipe);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const json diagnosis = json::parse(d.out)["doctor"];
  const json* fallback = nullptr;
  for (const auto& f : diagnosis["findings"])
    if (f["id"] == "gpu.cpu_fallback_ops") fallback = &f;
  ASSERT_NE(fallback, nullptr) << diagnosis["findings"].dump(1);
  EXPECT_EQ((*fallback)["severity"], "warning");
  const double share = (*fallback)["data"]["cpu_weight_share"].get<double>();
  EXPECT_GT(share, 0.2) << fallback->dump(1);
  EXPECT_LT(share, 1.0) << fallback->dump(1);
  EXPECT_NE((*fallback)["title"].get<std::string>().find("Vulkan0"), std::string::npos) << fallback->dump(1);
  bool names_ffn = false;
  for (const auto& line : (*fallback)["evidence"]) names_ffn = names_ffn || line.get<std::string>().find("MUL_MAT on ffn_") == 0;
  EXPECT_TRUE(names_ffn) << fallback->dump(1);
}

TEST(Vulkan, ALibraryThatFailsToLoadIsNamedWithItsReason) {
  SKIP_WITHOUT_LAVAPIPE();
  // A broken Vulkan loader first on the library path: libggml-vulkan.so cannot load, which
  // ggml's own loader passes over in silence.
  TempDir dir;
  std::ofstream(dir.file("libvulkan.so.1")) << "not an ELF file\n";
  const Env broken{{"LD_LIBRARY_PATH", dir.path()}, {"GGML_VK_VISIBLE_DEVICES", "0"}};
  const json report = bench({"-m", tiny_model(), "-p", "0"}, broken);
  ASSERT_TRUE(report.is_object());
  const json gpus = report["provenance"]["engine"]["gpu_backends"];
  ASSERT_EQ(gpus.size(), 1u) << gpus.dump();
  EXPECT_NE(gpus[0]["error"].get<std::string>().find("libvulkan.so.1"), std::string::npos) << gpus.dump();
  EXPECT_TRUE(report["results"][0]["placement"]["devices"].empty());

  const auto d = run_edgeprobe_with({"doctor", "-m", tiny_model(), "-t", "1", "-p", "16", "-n", "4", "-r", "1", "--no-experiments",
                            "--no-store", "-o", "json", "-q"},
                           broken);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  bool named = false;
  const json diagnosis = json::parse(d.out)["doctor"];
  for (const auto& f : diagnosis["findings"])
    if (f["id"] == "gpu.backend_failed") named = f["evidence"][0].get<std::string>().find("libvulkan.so.1") != std::string::npos;
  EXPECT_TRUE(named) << d.out;
}

TEST(Vulkan, ACpuTypeDeviceSkippedByDefaultIsNamed) {
  SKIP_WITHOUT_LAVAPIPE();
  // Without GGML_VK_VISIBLE_DEVICES, ggml-vulkan passes lavapipe over (a CPU-type device):
  // the backend loads with no device, and doctor says which device it skipped.
  const auto d = run_edgeprobe_with({"doctor", "-m", tiny_model(), "-t", "1", "-p", "16", "-n", "4", "-r", "1", "--no-experiments",
                            "--no-store", "-o", "json", "-q"},
                           {});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  json found;
  const json diagnosis = json::parse(d.out)["doctor"];
  for (const auto& f : diagnosis["findings"])
    if (f["id"] == "gpu.no_device") found = f;
  ASSERT_TRUE(found.is_object()) << d.out;
  EXPECT_EQ(found["severity"], "info");
  EXPECT_NE(found["title"].get<std::string>().find("llvmpipe"), std::string::npos) << found.dump(1);
}

TEST(Vulkan, AnUnknownDeviceIsOneLineNamingTheDevicesThere) {
  SKIP_WITHOUT_LAVAPIPE();
  const auto r = run_edgeprobe_with({"bench", "-m", tiny_model(), "-p", "0", "-n", "1", "-r", "1", "--no-store", "-dev", "Nope0", "-q"},
                           kLavapipe);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no GPU device named 'Nope0'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Vulkan0"), std::string::npos) << r.err;
}

// The GPU's own ceilings, measured through ggml on lavapipe into a fresh cache: the probe
// names the weight type Vulkan has no matmul for, an offloaded bench is judged against the
// GPU's figures (the CPU run against the CPU's), and predict uses them.
TEST(Vulkan, GpuCeilingsJudgeTheOffloadedRunAndPredictForTheGpu) {
  SKIP_WITHOUT_LAVAPIPE();
  TempDir home;
  const Env env{{"GGML_VK_VISIBLE_DEVICES", "0"}, {"XDG_CACHE_HOME", home.file("cache")}};
  const auto probe = run_edgeprobe_with({"probe", "--gpu", "Vulkan0", "-m", tiny_model("tq1_0"), "-o", "json", "-q"}, env, 600);
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  const json ceilings = json::parse(probe.out)["ceilings"];
  ASSERT_EQ(ceilings["gpus"].size(), 1u) << ceilings.dump();
  const json& gpu = ceilings["gpus"][0];
  EXPECT_EQ(gpu["device"], "Vulkan0");
  EXPECT_NE(gpu["device_description"].get<std::string>().find("llvmpipe"), std::string::npos);
  const double gpu_read = gpu["bandwidth"]["read_median_gb_per_s"].get<double>();
  EXPECT_GT(gpu_read, 0);
  bool q4_rate = false;
  for (const auto& p : gpu["compute"]["points"]) q4_rate = q4_rate || (p["type"] == "q4_0" && p["median_gflop_per_s"] > 0);
  EXPECT_TRUE(q4_rate) << gpu["compute"].dump();
  bool named = false;
  for (const auto& k : gpu["model_kernels"])
    named = named || k.value("error", "").find("Vulkan0 has no tq1_0 matmul kernel") != std::string::npos;
  EXPECT_TRUE(named) << gpu["model_kernels"].dump();

  std::vector<std::string> args{"bench", "-m", tiny_model(), "-ngl", "0,99", "-p", "64", "-n", "8", "-r", "1", "-t", "1",
                                "--no-store", "--sample-hz", "0", "-o", "json", "-q"};
  auto b = run_edgeprobe_with(args, env, 600);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const json report = json::parse(b.out);
  const json& host = report["provenance"]["ceilings"];
  ASSERT_EQ(host["gpus"].size(), 1u);
  // A roofline figure it could not work out is null: read as 0 so a failure shows the dump.
  auto figure = [](const json& v) { return v.is_number() ? v.get<double>() : 0.0; };
  const json& on_gpu = result_of(report, "tg8", 99)["roofline"];
  EXPECT_EQ(on_gpu.value("ceiling_device", ""), "Vulkan0") << on_gpu.dump();
  EXPECT_DOUBLE_EQ(figure(on_gpu["bandwidth_gb_per_s"]), host["gpus"][0]["bandwidth"]["read_median_gb_per_s"].get<double>())
      << on_gpu.dump();
  EXPECT_GT(figure(on_gpu["decode_ceiling_tokens_per_s"]), 0) << on_gpu.dump();
  const json& on_cpu = result_of(report, "tg8", 0)["roofline"];
  EXPECT_FALSE(on_cpu.contains("ceiling_device")) << on_cpu.dump();
  // The CPU's bandwidth still contended after its retries is kept out as 0 (probe/contention.h;
  // CI runs this beside other tests) and the roofline then says null: the CPU run still takes
  // the CPU's figure, never the GPU's.
  EXPECT_DOUBLE_EQ(figure(on_cpu["bandwidth_gb_per_s"]), host["bandwidth"]["read_median_gb_per_s"].get<double>())
      << on_cpu.dump() << "\n" << host["bandwidth"].dump();
  const json& pp_on_gpu = result_of(report, "pp64", 99)["roofline"];
  EXPECT_GT(figure(pp_on_gpu["prefill_ceiling_tokens_per_s"]), 0) << pp_on_gpu.dump();

  const auto p = run_edgeprobe_with({"predict", "-m", tiny_model(), "--gpu", "Vulkan0", "-p", "64", "-n", "8", "-o", "json"},
                                    env, 600);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const json prediction = json::parse(p.out);
  EXPECT_NE(prediction["device"].get<std::string>().find("GPU Vulkan0"), std::string::npos) << prediction.dump();
  ASSERT_EQ(prediction["rows"].size(), 1u);
  EXPECT_EQ(prediction["rows"][0]["config"]["threads"], 0);
  EXPECT_GT(figure(prediction["rows"][0]["decode_tokens_per_s"]["value"]), 0) << prediction.dump();

  const auto bad = run_edgeprobe_with({"predict", "-m", tiny_model(), "--gpu", "Nope0"}, env);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("no GPU device 'Nope0' here (ggml has Vulkan0)"), std::string::npos) << bad.err;
}

// session and kv-serve take bench's offload flags: llama.cpp's own log line says where the
// layers went, and a device that is not there is refused before anything runs.
TEST(Vulkan, SessionAndKvServeTakeTheOffloadFlags) {
  SKIP_WITHOUT_LAVAPIPE();
  for (const auto& [ngl, said] : {std::pair{"99", "offloaded 5/5 layers to GPU"}, std::pair{"0", "offloaded 0/5 layers to GPU"}}) {
    const auto s = run_edgeprobe_with({"session", "-m", tiny_model(), "--rounds", "1", "--conversations", "1", "--max-tokens",
                                       "4", "-ngl", ngl, "--no-store", "--sample-hz", "0", "-o", "json", "-v"},
                                      kLavapipe);
    ASSERT_EQ(s.exit_code, 0) << s.err;
    EXPECT_NE(s.err.find(said), std::string::npos) << "-ngl " << ngl << ":\n" << s.err.substr(0, 4000);
    const json config = json::parse(s.out)["configs"][0]["config"];
    EXPECT_EQ(config.value("n_gpu_layers", -1), std::stoi(ngl)) << config.dump();
  }
  TempDir dir;
  std::ofstream(dir.file("token")) << "0123456789abcdef0123456789abcdef\n";
  const auto k = run_edgeprobe_with({"kv-serve", "-m", tiny_model(), "--token-file", dir.file("token"), "--listen",
                                     "127.0.0.1:0", "-dev", "Nope0"},
                                    kLavapipe, 60);
  EXPECT_EQ(k.exit_code, 2) << k.err;
  EXPECT_NE(k.err.find("no GPU device named 'Nope0'"), std::string::npos) << k.err;
}

// Two of doctor's GPU findings from real placements on lavapipe: -ngl 2 of 5 layers is a
// partial offload (and its CPU layers are not a fallback), -ngl 0 with op offload runs the
// prompt's batch on the GPU and every decode node on the CPU.
TEST(Vulkan, DoctorNamesAPartialOffloadAndADecodeLeftOnTheCpu) {
  SKIP_WITHOUT_LAVAPIPE();
  auto findings_at = [](const std::string& ngl) {
    const auto d = run_edgeprobe_with({"doctor", "-m", tiny_model(), "-t", "1", "-p", "64", "-n", "8", "-r", "1",
                                       "--no-experiments", "--no-store", "-o", "json", "-q", "-ngl", ngl},
                                      kLavapipe);
    EXPECT_EQ(d.exit_code, 0) << d.err;
    std::map<std::string, json> by_id;
    const json doc = d.exit_code == 0 ? json::parse(d.out) : json::object();
    for (const auto& f : doc.value("doctor", json::object()).value("findings", json::array()))
      by_id[f["id"].get<std::string>()] = f;
    return by_id;
  };
  const auto partial = findings_at("2");
  ASSERT_TRUE(partial.contains("gpu.partial_offload"));
  const json& f = partial.at("gpu.partial_offload");
  EXPECT_EQ(f["title"], "partial offload: 2 of 5 layers on the GPU");
  ASSERT_TRUE(f["speedup"].is_number()) << f.dump(1);
  EXPECT_GT(f["speedup"].get<double>(), 1.2) << f.dump(1);  // 3 of 5 layers' weights stayed on the CPU
  EXPECT_FALSE(partial.contains("gpu.cpu_fallback_ops")) << partial.at("gpu.cpu_fallback_ops").dump(1);
  EXPECT_FALSE(partial.contains("gpu.decode_on_cpu"));

  const auto none = findings_at("0");
  EXPECT_TRUE(none.contains("gpu.not_used"));
  ASSERT_TRUE(none.contains("gpu.decode_on_cpu"));
  EXPECT_EQ(none.at("gpu.decode_on_cpu")["title"], "prefill ran on Vulkan0 but decode on the CPU");
}

// sysinfo names llama.cpp's GPU backends: the device a library offers, or why it gave none.
TEST(Vulkan, SysinfoListsTheGpuBackendsAndWhyOneHasNoDevice) {
  SKIP_WITHOUT_LAVAPIPE();
  const auto s = run_edgeprobe_with({"sysinfo", "-o", "json"}, kLavapipe, 60);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const json gpus = json::parse(s.out)["gpu_backends"];
  ASSERT_EQ(gpus.size(), 1u) << gpus.dump();
  EXPECT_EQ(gpus[0]["devices"][0]["name"], "Vulkan0");
  const auto skipped = run_edgeprobe_with({"sysinfo"}, {}, 60);
  EXPECT_NE(skipped.out.find("vulkan: loaded, no device"), std::string::npos) << skipped.out;
  TempDir dir;
  std::ofstream(dir.file("libvulkan.so.1")) << "not an ELF file\n";
  const auto broken = run_edgeprobe_with({"sysinfo"}, {{"LD_LIBRARY_PATH", dir.path()}}, 60);
  EXPECT_NE(broken.out.find("vulkan: did not load: "), std::string::npos) << broken.out;
  EXPECT_NE(broken.out.find("libvulkan.so.1"), std::string::npos) << broken.out;
}
