#include "runner/load_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "core/error.h"
#include "core/stats.h"
#include "runner/request_path.h"

namespace edgeprobe::runner {
namespace {

constexpr int kDefaultOpenLoopCap = 64;

result::LatencyDistribution distribution(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  return {stats::mean(values), stats::quantile_sorted(values, 0.5), stats::stddev(values),
          stats::quantile_sorted(values, 0.9), stats::quantile_sorted(values, 0.99)};
}

}  // namespace

std::map<std::string, double> parse_slo(const std::string& text) {
  std::map<std::string, double> slo;
  for (const auto& item : workload::split_list(text)) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (eq == std::string::npos || (key != "ttft_ms" && key != "tpot_ms" && key != "e2el_ms"))
      throw_bad_input("--slo '{}': use ttft_ms=N, tpot_ms=N and/or e2el_ms=N, comma-separated", item);
    char* end = nullptr;
    const double v = std::strtod(item.c_str() + eq + 1, &end);
    if (end == item.c_str() + eq + 1 || *end != '\0' || !(v > 0))
      throw_bad_input("--slo '{}': a bound in ms > 0", item);
    slo[key] = v;
  }
  return slo;
}

void validate(const LoadOptions& o) {
  for (int c : o.concurrency)
    if (c < 1 || c > 256) throw_bad_input("--concurrency {} out of range 1..256", c);
  if (!(o.request_rate >= 0 && o.request_rate <= 10000))
    throw_bad_input("--request-rate {} out of range 0..10000", o.request_rate);
  if (o.num_requests < 1 || o.num_requests > 100000)
    throw_bad_input("--num-requests {} out of range 1..100000", o.num_requests);
  if (!(o.max_duration_s > 0 && o.max_duration_s <= 86400))
    throw_bad_input("--max-duration {} out of range (0, 86400] seconds", o.max_duration_s);
}

result::ServingLevel summarize_load(const std::vector<RequestRecord>& records, const std::map<std::string, double>& slo) {
  std::vector<double> ttft, tpot, itl, e2el;
  double first = 0, last = 0;
  int completed = 0, good = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  std::vector<std::string> errors;
  for (const auto& r : records) {
    if (!r.ok) {
      if (errors.size() < 5 && std::find(errors.begin(), errors.end(), r.error) == errors.end())
        errors.push_back(r.error);
      continue;
    }
    first = completed == 0 ? r.start_s : std::min(first, r.start_s);
    last = completed == 0 ? r.end_s : std::max(last, r.end_s);
    ++completed;
    ttft.push_back(r.ttft_ms);
    if (r.completion_tokens > 1) tpot.push_back(r.tpot_ms);
    itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
    e2el.push_back(r.e2el_ms);
    input_tokens += r.prompt_tokens;
    output_tokens += r.completion_tokens;
    // DistServe's goodput: requests that met every bound given.
    const std::map<std::string, double> got = {
        {"ttft_ms", r.ttft_ms}, {"tpot_ms", r.tpot_ms}, {"e2el_ms", r.e2el_ms}};
    bool met = true;
    for (const auto& [k, bound] : slo) met = met && got.at(k) <= bound;
    good += met ? 1 : 0;
  }
  const double duration = last - first;
  auto per_s = [&](double x) { return duration > 0 ? std::optional<double>(x / duration) : std::nullopt; };
  result::ServingLevel s;
  s.completed = completed;
  s.failed = static_cast<int>(records.size()) - completed;
  s.duration_s = duration;
  s.total_input_tokens = input_tokens;
  s.total_output_tokens = output_tokens;
  s.request_throughput = per_s(completed);
  s.output_throughput = per_s(static_cast<double>(output_tokens));
  s.total_token_throughput = per_s(static_cast<double>(input_tokens + output_tokens));
  s.goodput = slo.empty() ? std::nullopt : per_s(good);
  s.slo = slo;
  s.errors = std::move(errors);
  s.ttft = distribution(std::move(ttft));
  s.tpot = distribution(std::move(tpot));
  s.itl = distribution(std::move(itl));
  s.e2el = distribution(std::move(e2el));
  return s;
}

result::ServingLevel run_load_level(const engine::LoadedModel& model, const engine::ContextOptions& context,
                              const workload::TestCase& test, const std::string& api,
                              const LoadOptions& options, int concurrency, uint64_t seed,
                              const RunClock& clock, const StopToken& stop) {
  const bool open_loop = concurrency == 0;
  const int workers =
      open_loop ? (options.max_concurrency > 0 ? options.max_concurrency : kDefaultOpenLoopCap) : concurrency;
  const int n = options.num_requests;
  // Open loop: arrival times drawn up front (exponential gaps), so a slow server does not
  // slow the arrivals; a request waits only when every worker is busy.
  std::vector<double> arrival_s(static_cast<size_t>(n), 0);
  if (open_loop) {
    std::mt19937_64 rng(seed ^ 0x5eedULL);
    std::exponential_distribution<double> gap(options.request_rate);
    double t = 0;
    for (auto& a : arrival_s) {
      a = t;
      t += gap(rng);
    }
  }
  std::vector<RequestRecord> records(static_cast<size_t>(n));
  std::vector<char> sent(static_cast<size_t>(n), 0);
  std::atomic<int> next{0};
  const double t0 = static_cast<double>(clock.now_ns()) / 1e9;
  auto worker = [&](std::unique_ptr<engine::Completer> completer) {
    for (int i = next++; i < n && !stop.stop_requested(); i = next++) {
      const double due = t0 + arrival_s[static_cast<size_t>(i)];
      if (due - t0 > options.max_duration_s) return;
      const double now = static_cast<double>(clock.now_ns()) / 1e9;
      if (due > now) std::this_thread::sleep_for(std::chrono::duration<double>(due - now));
      if (static_cast<double>(clock.now_ns()) / 1e9 - t0 > options.max_duration_s) return;
      auto& rec = records[static_cast<size_t>(i)];
      sent[static_cast<size_t>(i)] = 1;
      try {
        const auto req = bench_request(model, test, api, seed + static_cast<uint64_t>(i));
        const auto r = completer->complete(req, clock);
        const auto t = time_request(r);
        rec.ok = true;
        rec.start_s = static_cast<double>(r.start_ns) / 1e9;
        rec.end_s = static_cast<double>(r.end_ns) / 1e9;
        rec.ttft_ms = t.ttft_ms;
        rec.tpot_ms = t.tpot_ms;
        rec.e2el_ms = t.e2e_ms;
        rec.itl_ms = t.itl_ms;
        rec.completion_tokens = t.completion_tokens;
        rec.prompt_tokens =
            r.prompt_tokens > 0 ? r.prompt_tokens : static_cast<int>(req.prompt_tokens.size());
      } catch (const std::exception& e) {
        rec.error = e.what();
      }
    }
  };
  // Completers are made here, so one that cannot be made fails the level at once.
  std::vector<std::unique_ptr<engine::Completer>> completers;
  for (int w = 0; w < std::min(workers, n); ++w) completers.push_back(model.new_completer(context));
  std::vector<std::thread> threads;
  for (auto& c : completers) threads.emplace_back(worker, std::move(c));
  for (auto& t : threads) t.join();

  std::vector<RequestRecord> done;
  for (size_t i = 0; i < records.size(); ++i)
    if (sent[i]) done.push_back(records[i]);
  result::ServingLevel level = summarize_load(done, options.slo);
  if (!open_loop) level.concurrency = concurrency;
  level.max_concurrency = workers;
  if (open_loop) level.request_rate = options.request_rate;
  level.num_requests = n;
  level.not_sent = n - static_cast<int>(done.size());
  return level;
}

}  // namespace edgeprobe::runner
