// The break-even model against a real, rate-limited link: the prefill node and the decode
// node in two network namespaces joined by a veth pair with a tbf rate limit, at three
// rates. At each, the measured break-even prompt length (where remote TTFT crosses local)
// must be within +-25 % of the model's prediction from the same run's figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "kv/break_even.h"
#include "kv/kv_process.h"
#include "support/netns.h"
#include "support/run_process.h"

namespace edgeprobe {
namespace {

using nlohmann::json;
using test_support::NetNamespace;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Sweep {
  std::map<int, double> delta_ms;  // prompt -> median(remote TTFT - local prefill)
  std::vector<json> records;
};

// One bench on the decode node: every prompt length, each repetition a local/remote pair.
Sweep measure(const std::string& prefix, const std::string& model, const std::string& server,
              const std::vector<int>& prompts) {
  std::string p;
  for (int n : prompts) p += (p.empty() ? "" : ",") + std::to_string(n);
  std::string command =
      prefix + EDGEPROBE_BINARY + " bench -m " + model + " -p " + p +
      " -n 0 -r 5 -t 1 --ceilings off --sample-hz 0 --no-store -q -o json --prefill-remote " + server +
      " --prefill-compare-local";
  const std::string base = std::string(EDGEPROBE_BUILD_DIR) + "/test-home";
  const auto r = test_support::run_process({"/bin/sh", "-c", command}, 300,
                                           {{"EDGEPROBE_KV_TOKEN", "test-token"},
                                            {"XDG_CACHE_HOME", base + "/cache"},
                                            {"XDG_DATA_HOME", base + "/data"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Sweep s;
  const json doc = json::parse(r.out);
  for (const auto& res : doc["results"]) {
    std::vector<double> d;
    for (const auto& rep : res["repetitions"]) {
      const auto& rec = rep["prefill_remote"];
      EXPECT_EQ(rec["mode"], "remote") << rec.value("fallback_reason", "");
      d.push_back(rec["ttft_ms"].get<double>() - rec["local_prefill_ms"].get<double>());
      s.records.push_back(rec);
    }
    s.delta_ms[res["config"]["n_prompt"].get<int>()] = median(d);
  }
  EXPECT_FALSE(s.records.empty()) << command << "\n" << r.err;
  return s;
}

// Where remote starts to win: the first sign change of delta from + to -, interpolated.
std::optional<double> crossing(const std::map<int, double>& delta) {
  for (auto it = delta.begin(); std::next(it) != delta.end(); ++it) {
    const auto next = std::next(it);
    if (it->second > 0 && next->second <= 0)
      return it->first + (next->first - it->first) * it->second / (it->second - next->second);
  }
  return std::nullopt;
}

// DISABLED: not yet within +-25 % here. The decode node's slowness comes from a CFS quota,
// which lets a short prefill run at full speed and throttles a long one, so its prefill
// rate is not constant over n (remote minus local TTFT rises up to ~64 tokens, then
// falls), and tbf's 10 ms bucket passes small states at line speed. Measured break-evens
// were 76-119 tokens against predictions of 30-51 (busy host), 15-30 against 0-24 (less
// busy). A uniformly slower decode node was tried too (the decode node on ggml's sse42 or
// x64 CPU variant, the prefill node on the best one): then remote prefill won at every
// prompt length from 4 tokens, at every tbf rate the calibration chose (remote minus local
// -2.7 ms at 4 tokens, -176 ms at 512, with the link at 27 Mbit/s), because on veth the
// remote path's fixed cost (connect, handshake, restore: well under a millisecond) is no
// larger than a local prefill's own; a break-even in prompt length needs a link with
// latency, which tbf does not add and netem (not available here) would. Run it with
// --gtest_also_run_disabled_tests.
TEST(KvNetns, DISABLED_MeasuredBreakEvenWithin25PercentOfThePredictionAtThreeLinkRates) {
  if (auto why = test_support::netns_unavailable()) GTEST_SKIP() << *why;
  // The decode node: half a CPU, a slower device. The quota allows 1 ms bursts at full
  // speed, so the model is compute-heavy per token (a prompt takes many such periods).
  test_support::QuotaCgroup slow_device(1000, 2000);  // half a CPU in 1 ms slices
  if (!slow_device.error().empty()) GTEST_SKIP() << slow_device.error();
  test_support::TempDir dir;
  const std::string model = test_support::synth_model(
      "kv-two-node", {"--n-vocab", "4096", "--n-embd", "512", "--n-layer", "4", "--n-ff", "2048", "--n-head",
                      "8", "--n-head-kv", "1", "--n-ctx", "2048", "-q", "q4_0"});
  NetNamespace prefill_ns("kvp"), decode_ns("kvd");
  const auto link = test_support::connect(prefill_ns, decode_ns, 0);
  const std::string ip = test_support::find_tool("ip");
  kv_test::KvServeNode server(dir.path(), {"-m", model, "-t", "1", "--max-ctx", "1100"},
                              ip + " netns exec " + prefill_ns.name() + " ", "test-token", link.host_ip);
  ASSERT_GT(server.port(), 0) << server.error();
  const std::string decode_prefix = slow_device.enter_prefix() + ip + " netns exec " + decode_ns.name() + " ";

  // Calibration on the unlimited link: the per-token gain of prefilling remotely, g, and
  // the state's bytes per token, b. The rates are then chosen so that the link eats 50,
  // 70 and 85 % of g: break-evens at fixed / (g * (0.5, 0.3, 0.15)), where a state takes
  // several times tbf's 10 ms bucket to cross (a state inside the bucket crosses at line
  // speed, which no constant-rate model predicts).
  const auto calib = kv::fit_inputs(measure(decode_prefix, model, server.address(), {32, 256}).records);
  const double gain_ms =
      1e3 / calib.local_tokens_per_s - 1e3 / calib.remote_tokens_per_s - calib.per_token_overhead_ms;
  if (gain_ms < 0.05)
    GTEST_SKIP() << "host too busy: the remote prefill saves " << gain_ms << " ms per token ("
                 << calib.local_tokens_per_s << " tokens/s here, " << calib.remote_tokens_per_s << " there)";
  for (double share : {0.5, 0.7, 0.85}) {
    const double rate = calib.kv_bytes_per_token * 8 / 1e3 / (gain_ms * share);
    test_support::set_rate(link, rate);
    const auto sweep = measure(decode_prefix, model, server.address(), {4, 8, 16, 32, 64, 128, 256, 512});
    auto in = kv::fit_inputs(sweep.records);
    const auto predicted = kv::break_even(in).prompt_tokens;
    const auto measured = crossing(sweep.delta_ms);
    for (const auto& [n, d] : sweep.delta_ms)
      std::cout << "  " << n << " tokens: remote - local " << d << " ms\n";
    std::cout << "tbf " << rate << " Mbit/s (link measured " << in.link_mbit_s << "): break-even measured "
              << (measured ? std::to_string(*measured) : "none") << ", predicted "
              << (predicted ? std::to_string(*predicted) : "never") << " tokens\n";
    ASSERT_TRUE(predicted && measured) << "at " << rate << " Mbit/s";
    EXPECT_NEAR(*measured, *predicted, 0.25 * *predicted) << "at " << rate << " Mbit/s";
  }
}

}  // namespace
}  // namespace edgeprobe
