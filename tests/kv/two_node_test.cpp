// The two-node speed claim on loopback: the decode node confined to 1 CPU and the prefill
// node given 2 (cgroup v1 cpusets). A timing test: it runs alone (SERIAL).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "kv/break_even.h"
#include "kv/kv_process.h"
#include "support/run_process.h"

namespace edgeprobe {
namespace {

using kv_test::decode_node;
using kv_test::median;
using kv_test::parse;
using nlohmann::json;
using test_support::TempDir;

// The two-node claim: the decode node on 1 CPU, the prefill node on 2 (cgroup v1
// cpusets), loopback. Each repetition prefills locally and remotely (interleaved pairs),
// so host-speed swings hit both; medians decide. A long prompt's TTFT is lower remotely,
// and the break-even model fitted from the same records agrees with what was measured at
// both lengths.
TEST(KvTiming, TwoNodesLongPromptPaysAndTheModelAgrees) {
  test_support::CpusetCgroup decode_cpus("0"), prefill_cpus("0-1");
  if (!decode_cpus.error().empty()) GTEST_SKIP() << decode_cpus.error();
  if (!prefill_cpus.error().empty()) GTEST_SKIP() << prefill_cpus.error();
  TempDir dir;
  // Compute-heavy per token next to its KV size (1 KV head), so prefill dominates.
  const std::string model = test_support::synth_model(
      "kv-two-node", {"--n-vocab", "4096", "--n-embd", "512", "--n-layer", "4", "--n-ff", "2048", "--n-head",
                      "8", "--n-head-kv", "1", "--n-ctx", "2048", "-q", "q4_0"});
  // --poll 0: threads that spin on a shared, busy host wait for each other at every op.
  kv_test::KvServeNode server(dir.path(), {"-m", model, "-t", "2", "--poll", "0", "--max-ctx", "1100"},
                              prefill_cpus.enter_prefix());
  ASSERT_GT(server.port(), 0) << server.error();
  const int short_n = 4, long_n = 1024;
  std::vector<std::string> args{"bench", "-m", model, "-p", std::to_string(short_n) + "," + std::to_string(long_n),
                                 "--prefill-remote", server.address()};
  for (const char* a : {"-n", "0", "-r", "3", "-t", "1", "--ceilings", "off", "--sample-hz", "0", "--no-store", "-q",
                        "-o", "json", "--prefill-compare-local"})
    args.push_back(a);
  const json result = parse(decode_node(args, decode_cpus.enter_prefix()));
  std::map<int, std::pair<double, double>> ttft;  // prompt -> (local, remote) medians
  std::vector<json> records;
  for (const auto& r : result["results"]) {
    std::vector<double> local, remote;
    for (const auto& rep : r["repetitions"]) {
      const auto& rec = rep["prefill_remote"];
      ASSERT_EQ(rec["mode"], "remote") << rec.value("fallback_reason", "");
      local.push_back(rec["local_prefill_ms"].get<double>());
      remote.push_back(rec["ttft_ms"].get<double>());
      records.push_back(rec);
    }
    ttft[r["config"]["n_prompt"].get<int>()] = {median(local), median(remote)};
  }
  // The premise: the 2-CPU node prefills faster. On a host whose CPUs other work holds
  // (the cpusets are not exclusive), it may not; then the claim cannot be tested here.
  const auto fitted = kv::fit_inputs(records);
  const double speedup = fitted.remote_tokens_per_s / fitted.local_tokens_per_s;
  if (speedup < 1.3)
    GTEST_SKIP() << "host too busy for a two-node timing: the 2-CPU prefill node was " << speedup
                 << "x the 1-CPU node's rate (" << fitted.remote_tokens_per_s << " vs "
                 << fitted.local_tokens_per_s << " tokens/s)";
  const auto [short_local, short_remote] = ttft.at(short_n);
  const auto [long_local, long_remote] = ttft.at(long_n);
  EXPECT_LT(long_remote, long_local) << "a long prompt should pay off remotely";
  const auto be = kv::break_even(fitted);
  ASSERT_TRUE(be.prompt_tokens) << "the model says remote never wins";
  EXPECT_LT(*be.prompt_tokens, long_n);
  // The short prompt: on loopback the remote path's fixed cost (connect, handshake,
  // restore) is well under a millisecond, so even 4 tokens may pay off remotely on a quiet
  // host (measured: 0.61 against 0.73 ms, predicted break-even 1.3 tokens). What must hold
  // is that the model and the measurement agree, wherever the difference is clear of noise:
  // the measured one beyond 20 %, and the predicted break-even beyond 5x either side of the
  // short prompt (a crossing fitted from a few 2 ms TTFTs moves by that much: clean-clone
  // runs measured remote faster at 4 tokens against predicted crossings at 9.6 and 13.3).
  const bool crossing_clear = *be.prompt_tokens < short_n / 5.0 || *be.prompt_tokens > 5.0 * short_n;
  if (std::abs(short_remote - short_local) > 0.2 * short_local && crossing_clear) {
    EXPECT_EQ(short_remote < short_local, *be.prompt_tokens < short_n)
        << "measured " << short_local << " ms local, " << short_remote << " ms remote; predicted break-even "
        << *be.prompt_tokens << " tokens";
  }
  std::cout << "TTFT ms local/remote: " << short_n << " tokens " << short_local << "/" << short_remote << ", "
            << long_n << " tokens " << long_local << "/" << long_remote << "; predicted break-even "
            << *be.prompt_tokens << " tokens\n";
}

}  // namespace
}  // namespace edgeprobe
