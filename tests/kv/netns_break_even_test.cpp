// The break-even model against a real, rate-limited link with latency: the prefill node
// and the decode node in two network namespaces joined by a veth pair with a 20 ms round
// trip (a netfilter-queue delay: netem is not available here) and a tbf rate limit, at
// three rates. At each, the measured break-even prompt length (where remote TTFT crosses
// local) must be within +-25 % of the model's prediction from the same run's figures.
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

struct Sweep {
  std::map<int, double> delta_ms;  // prompt -> median(remote TTFT - local prefill)
  std::vector<json> records;
  // The host's steadiness during the sweep: the decode node's local prefill time per token,
  // median per prompt length from 128 tokens on, highest over lowest. A steady host gives
  // about 1.1-1.3 (attention grows with the prompt); this host's invisible slow stretches
  // give 2 and more, and then no crossing means anything.
  double local_per_token_spread = 0;
};

// One bench on the decode node: every prompt length, each repetition a local/remote pair.
Sweep measure(const std::string& prefix, const std::string& model, const std::string& server,
              const std::vector<int>& prompts, const std::string& cpu_variant) {
  std::string p;
  for (int n : prompts) p += (p.empty() ? "" : ",") + std::to_string(n);
  const auto r = kv_test::decode_node({"bench", "-m", model, "-p", p, "-n", "0", "-r", "5", "-t", "1", "--ceilings",
                                       "off", "--sample-hz", "0", "--no-store", "-q", "-o", "json",
                                       "--prefill-remote", server, "--prefill-compare-local", "--cpu-variant",
                                       cpu_variant},
                                      prefix);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Sweep s;
  const json doc = json::parse(r.out);
  double lowest = 0, highest = 0;
  for (const auto& res : doc["results"]) {
    std::vector<double> d, local;
    const int n = res["config"]["n_prompt"].get<int>();
    for (const auto& rep : res["repetitions"]) {
      const auto& rec = rep["prefill_remote"];
      EXPECT_EQ(rec["mode"], "remote") << rec.value("fallback_reason", "");
      d.push_back(rec["ttft_ms"].get<double>() - rec["local_prefill_ms"].get<double>());
      local.push_back(rec["local_prefill_ms"].get<double>() / n);
      s.records.push_back(rec);
    }
    s.delta_ms[n] = kv_test::median(d);
    if (n >= 128 && !local.empty()) {
      const double per_token = kv_test::median(local);
      lowest = lowest == 0 ? per_token : std::min(lowest, per_token);
      highest = std::max(highest, per_token);
    }
  }
  s.local_per_token_spread = lowest > 0 ? highest / lowest : 0;
  EXPECT_FALSE(s.records.empty()) << r.err;
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

// The decode node is the slower device through an older ggml CPU variant (sandybridge: AVX)
// at full speed, so its prefill rate is constant over n; a CPU quota instead lets a short
// prefill run at full speed and throttles a long one. The prefill node runs the best
// variant. The link's round trip is the remote path's fixed cost (on bare veth it is under
// a millisecond, no more than a local prefill call's own, and remote won from 4 tokens on
// at every rate), and tbf's bucket is cut to 1 ms so that a state does not cross its
// first 10 ms at line speed.
TEST(KvNetns, MeasuredBreakEvenWithin25PercentOfThePredictionAtThreeLinkRates) {
  if (auto why = test_support::link_delay_unavailable()) GTEST_SKIP() << *why;
  test_support::TempDir dir;
  const std::string model = test_support::synth_model(
      "kv-two-node", {"--n-vocab", "4096", "--n-embd", "512", "--n-layer", "4", "--n-ff", "2048", "--n-head",
                      "8", "--n-head-kv", "1", "--n-ctx", "2048", "-q", "q4_0"});
  NetNamespace prefill_ns("kvp"), decode_ns("kvd");
  const auto link = test_support::connect(prefill_ns, decode_ns, 0);
  test_support::LinkDelay delay(link, 10.0);  // 20 ms round trip: a Wi-Fi hop to a box in the house
  const std::string ip = test_support::find_tool("ip");
  kv_test::KvServeNode server(dir.path(), {"-m", model, "-t", "1", "--max-ctx", "1100"},
                              ip + " netns exec " + prefill_ns.name() + " ", "test-token", link.host_ip);
  ASSERT_GT(server.port(), 0) << server.error();
  const std::string decode_prefix = ip + " netns exec " + decode_ns.name() + " ";
  const std::string slow_variant = "sandybridge";

  // Calibration on the unlimited link: the per-token gain of prefilling remotely, g, and
  // the state's bytes per token, b. The rates are then chosen so that the link eats 30,
  // 50 and 70 % of g: break-evens at fixed / (g * (0.7, 0.5, 0.3)).
  const auto calib =
      kv::fit_inputs(measure(decode_prefix, model, server.address(), {64, 512}, slow_variant).records);
  const double gain_ms =
      1e3 / calib.local_tokens_per_s - 1e3 / calib.remote_tokens_per_s - calib.per_token_overhead_ms;
  std::cout << "calibration: local " << calib.local_tokens_per_s << " tokens/s, remote "
            << calib.remote_tokens_per_s << ", fixed " << calib.fixed_ms << " ms, " << calib.kv_bytes_per_token
            << " bytes/token: remote saves " << gain_ms << " ms per token\n";
  if (gain_ms < 0.05)
    GTEST_SKIP() << "host too busy: the remote prefill saves " << gain_ms << " ms per token ("
                 << calib.local_tokens_per_s << " tokens/s here, " << calib.remote_tokens_per_s << " there)";
  // A rate aimed from the two-length calibration can land where remote prefill no longer
  // pays within the longest prompt (attention's growth, which those two lengths cannot
  // show; seen in CI: no crossing up to 1,024 tokens, predicted 2,210 and 2,583). A sweep
  // without a crossing whose prediction also lies past its longest prompt agrees with the
  // model, but judges no crossing; at least two of the three rates must be judged.
  const std::vector<int> lengths = {16, 32, 64, 128, 256, 512, 1024};
  auto both_beyond = [&](const std::optional<double>& measured, const std::optional<double>& predicted) {
    return !measured && (!predicted || *predicted > lengths.back());
  };
  int judged = 0;
  for (double share : {0.3, 0.5, 0.7}) {
    const double rate = calib.kv_bytes_per_token * 8 / 1e3 / (gain_ms * share);
    test_support::set_rate(link, rate, 1.0);
    // This host's speed swings several-fold within a minute with no sign inside the guest,
    // and one slow stretch in a sweep moves its crossing. A sweep the host visibly disturbed
    // (the local prefill's time per token spread by more than 1.5x over the prompt lengths)
    // is measured again; a steady sweep that misses gets one more try; the last steady sweep
    // is judged. Three disturbed sweeps in a row skip the test with the figures.
    constexpr double kSteady = 1.5;
    Sweep sweep;
    kv::DisaggInputs in;
    std::optional<double> predicted, measured;
    int steady = 0;
    std::string disturbed;
    std::vector<double> missed, missed_predicted;  // steady sweeps that missed: crossing, prediction
    for (int attempt = 1; attempt <= 3 && steady < 2; ++attempt) {
      Sweep s = measure(decode_prefix, model, server.address(), lengths, slow_variant);
      if (s.local_per_token_spread > kSteady) {
        disturbed += " " + std::to_string(s.local_per_token_spread);
        std::cout << "  attempt " << attempt << " at " << rate << " Mbit/s: the host disturbed it (local prefill per "
                  << "token spread " << s.local_per_token_spread << "x); measuring again\n";
        continue;
      }
      ++steady;
      sweep = std::move(s);
      in = kv::fit_inputs(sweep.records);
      predicted = kv::break_even(in).prompt_tokens;
      measured = crossing(sweep.delta_ms);
      if (predicted && measured && std::abs(*measured - *predicted) <= 0.25 * *predicted) break;
      if (both_beyond(measured, predicted)) break;
      if (measured && predicted) missed.push_back(*measured), missed_predicted.push_back(*predicted);
      std::cout << "  attempt " << attempt << " at " << rate << " Mbit/s: measured "
                << (measured ? std::to_string(*measured) : "none") << ", predicted "
                << (predicted ? std::to_string(*predicted) : "never") << "\n";
    }
    // Two steady sweeps that both missed, whose crossings or predictions (each fitted from
    // its own sweep) are further apart than the tolerance: the host does not reproduce its own
    // measurement now (the prefill node and the link are disturbed too, which the local gauge
    // cannot see), so it cannot judge the model. Two misses that repeat each other fail.
    auto apart = [](const std::vector<double>& v) { return std::abs(v[0] - v[1]) > 0.25 * std::min(v[0], v[1]); };
    if (missed.size() == 2 && (apart(missed) || apart(missed_predicted)))
      GTEST_SKIP() << "host too noisy at " << rate << " Mbit/s: two steady sweeps crossed at " << missed[0] << " and "
                   << missed[1] << " tokens against predictions of " << missed_predicted[0] << " and "
                   << missed_predicted[1] << ", so the measurement does not repeat";
    if (steady == 0)
      GTEST_SKIP() << "host too noisy at " << rate << " Mbit/s: the local prefill's time per token spread by" << disturbed
                   << "x over the prompt lengths in three sweeps (a steady host: under " << kSteady << "x)";
    for (const auto& [n, d] : sweep.delta_ms)
      std::cout << "  " << n << " tokens: remote - local " << d << " ms\n";
    std::cout << "tbf " << rate << " Mbit/s (host spread " << sweep.local_per_token_spread << "x, link measured "
              << in.link_mbit_s << ", fixed " << in.fixed_ms
              << " ms, local fixed " << in.local_fixed_ms << " ms): break-even measured "
              << (measured ? std::to_string(*measured) : "none") << ", predicted "
              << (predicted ? std::to_string(*predicted) : "never") << " tokens\n";
    if (both_beyond(measured, predicted)) {
      std::cout << "  no crossing up to " << lengths.back() << " tokens, and the model agrees\n";
      continue;
    }
    ++judged;
    // The short prompt does not pay over this link, the long one does, and the model
    // says so; then the crossing itself.
    EXPECT_GT(sweep.delta_ms.begin()->second, 0) << "at " << rate << " Mbit/s";
    EXPECT_LT(sweep.delta_ms.rbegin()->second, 0) << "at " << rate << " Mbit/s";
    ASSERT_TRUE(predicted && measured) << "at " << rate << " Mbit/s";
    EXPECT_GT(*predicted, sweep.delta_ms.begin()->first);
    EXPECT_LT(*predicted, sweep.delta_ms.rbegin()->first);
    EXPECT_NEAR(*measured, *predicted, 0.25 * *predicted) << "at " << rate << " Mbit/s";
  }
  EXPECT_GE(judged, 2) << "too few rates had a crossing within " << lengths.back() << " tokens to judge";
}

}  // namespace
}  // namespace edgeprobe
