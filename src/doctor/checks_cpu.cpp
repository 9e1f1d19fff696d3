// Where the threads run: their count against the usable CPUs and the measured sweep,
// the clusters they landed on, other processes and the hypervisor taking CPU time, and
// a cgroup quota throttling the run.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "analysis/cpu_time_cost.h"
#include "doctor/checks_internal.h"

namespace edgeprobe::doctor::checks {

// ---- 4. threads ---------------------------------------------------------------------
void check_threads(const Evidence& e, std::vector<Finding>& out) {
  const auto& o = e.options;
  const auto usable = usable_cpus(e.device, o.config);
  const int threads = o.config.threads;
  const Rates mine = rates(e.primary.report, o.n_prompt, o.n_gen);

  // The screen: every count once, in one child. It shows the scaling; the count worth
  // changing to is then measured in interleaved pairs (e.thread_pairs).
  std::vector<std::string> table = {fmt::format("-t {}: {} (as configured)", threads, rates_text(mine))};
  json sweep = json::array({{{"threads", threads}, {"rates", to_json(mine)}}});
  std::vector<std::pair<int, double>> by_count;
  if (auto s = turn_s(mine, o.n_prompt, o.n_gen)) by_count.push_back({threads, *s});
  if (e.thread_sweep && e.thread_sweep->ok()) {
    std::set<int> counts;
    for (const auto& r : e.thread_sweep->report->results) counts.insert(r.config.n_threads);
    for (int t : counts) {
      const Rates r = rates(e.thread_sweep->report, o.n_prompt, o.n_gen, "n_threads", t);
      table.push_back(fmt::format("-t {}: {} (screen, one repetition)", t, rates_text(r)));
      sweep.push_back({{"threads", t}, {"rates", to_json(r)}});
      if (auto s = turn_s(r, o.n_prompt, o.n_gen)) by_count.push_back({t, *s});
    }
  }
  std::sort(by_count.begin(), by_count.end());
  // "More threads is slower": a higher count that takes longer than a lower one.
  std::vector<std::string> anomalies;
  for (size_t i = 0; i + 1 < by_count.size(); ++i)
    for (size_t j = i + 1; j < by_count.size(); ++j)
      if (by_count[j].second > by_count[i].second * kMinGain)
        anomalies.push_back(fmt::format("-t {} is {:.2f}x slower than -t {}", by_count[j].first,
                                        by_count[j].second / by_count[i].second, by_count[i].first));
  const auto& pairs = e.thread_pairs;
  const PairVerdict verdict = pairs ? pairs->verdict : PairVerdict::kInconclusive;

  if (threads > static_cast<int>(usable.size())) {
    const int fix_t = std::max<int>(1, static_cast<int>(usable.size()));
    Finding f{"threads.oversubscribed", Severity::kWarning,
              fmt::format("{} threads on {} usable CPU(s): threads wait for each other at every barrier", threads, usable.size()),
              {fmt::format("usable CPUs: {} (affinity {}{}{})", cpu_list_text(usable), cpu_list_text(e.device.affinity),
                           e.device.cgroup.cpuset.empty() ? "" : ", cgroup cpuset " + cpu_list_text(e.device.cgroup.cpuset),
                           o.config.cpu_mask.empty() ? "" : ", -C " + o.config.cpu_mask)},
              "prefill+decode", std::nullopt, "", fmt::format("-t {}{}", fix_t, o.config.cpu_mask.empty() ? "" : " (or widen -C to more CPUs)"),
              {{"usable_cpus", usable}, {"threads", threads}, {"sweep", sweep}}};
    for (const auto& t : table) f.evidence.push_back(t);
    apply_measured(f, pairs, e);
    if (pairs && pairs->estimate && verdict != PairVerdict::kFaster) {
      // The reason (more threads than CPUs) and the measurement disagree, twice when it
      // was measured again: say so with both figures rather than pick one silently.
      f.data["disagreement"] = true;
      f.evidence.push_back(fmt::format("the measurement disagrees with the reason: {} measured {} against {}{}; the fix is the "
                                       "first-principles one, not confirmed on this machine",
                                       pairs->b_label, pairs->text(), pairs->a_label,
                                       pairs->first_estimate ? fmt::format(" (measured again; first round x{:.2f} [{:.2f}, {:.2f}])",
                                                                           pairs->first_estimate->median, pairs->first_estimate->low,
                                                                           pairs->first_estimate->high)
                                                             : ""));
      f.fix += " (not confirmed by the measurement: see the evidence)";
    }
    out.push_back(std::move(f));
    return;
  }
  if (pairs && verdict == PairVerdict::kFaster && pairs->estimate->median >= kMinGain) {
    Finding f{"threads.count", Severity::kWarning,
              fmt::format("{} is {:.2f}x faster than the configured {}", pairs->b_label, pairs->estimate->median, pairs->a_label),
              table, "prefill+decode", std::nullopt, "", pairs->b_label, {{"sweep", sweep}, {"anomalies", anomalies}}};
    apply_measured(f, pairs, e);
    for (const auto& a : anomalies) f.evidence.push_back("more threads is slower: " + a);
    out.push_back(std::move(f));
  } else if (!anomalies.empty() || by_count.size() > 1) {
    Finding f{"threads.scaling", Severity::kInfo, "thread scaling measured; the configured count is the fastest or within noise",
              table, "prefill+decode", std::nullopt, "", "", {{"sweep", sweep}, {"anomalies", anomalies}}};
    if (pairs) {
      f.evidence.push_back(fmt::format("{} against {} in interleaved pairs: {} ({})", pairs->b_label, pairs->a_label, pairs->text(),
                                       verdict_name(verdict)));
      f.data["measured"] = to_json(*pairs);
    }
    for (const auto& a : anomalies) f.evidence.push_back("more threads is slower, for counts not configured (screen): " + a);
    out.push_back(std::move(f));
  }

  // Where the threads actually ran: thread-time on clusters slower than the fastest one.
  const auto& clusters = e.device.cpus.clusters;
  if (clusters.size() < 2) return;
  const telemetry::Cluster* big = nullptr;
  for (const auto& c : clusters)
    if (!big || c.max_khz.value_or(0) > big->max_khz.value_or(0) || (c.max_khz == big->max_khz && c.capacity.value_or(0) > big->capacity.value_or(0)))
      big = &c;
  double slow_share = 0, weighted_khz = 0, total_share = 0;
  const result::TestResult* result = rv::find_result(e.primary.report, fmt::format("tg{}", o.n_gen));
  if (!result) result = rv::find_result(e.primary.report, fmt::format("pp{}", o.n_prompt));
  if (!result) return;
  std::map<std::string, double> share_by_cluster;
  double weight = 0;
  for (const char* phase : {"prefill", "decode"}) {
    for (const json* p : rv::phase_telemetry(*result, phase)) {
      const double ms = num(*p, "duration_ms");
      for (const auto& c : json_read::list(*p, "clusters"))
        if (field(c, "thread_time_share").is_number())
          share_by_cluster[text(c, "name")] += field(c, "thread_time_share").get<double>() * ms;
      weight += ms;
    }
  }
  if (weight <= 0) return;
  std::vector<std::string> ev;
  for (const auto& c : clusters) {
    const double share = share_by_cluster.count(c.name) ? share_by_cluster[c.name] / weight : 0;
    total_share += share;
    weighted_khz += share * static_cast<double>(c.max_khz.value_or(0));
    if (&c != big) slow_share += share;
    ev.push_back(fmt::format("{} ({}, CPUs {}, max {:.2f} GHz): {} of thread-time", c.name, c.role.empty() ? "uniform" : c.role,
                             cpu_list_text(c.cpus), static_cast<double>(c.max_khz.value_or(0)) / 1e6, pct(share)));
  }
  if (slow_share < kLittleCoreShare || !big->max_khz || total_share <= 0) return;
  const double mean_khz = weighted_khz / total_share;
  const int n_big = static_cast<int>(big->cpus.size());
  Finding f{"threads.little_cores", Severity::kWarning,
            fmt::format("{} of the inference thread-time ran on cores slower than the '{}' cluster", pct(slow_share / total_share), big->name),
            ev, "prefill+decode", mean_khz > 0 ? std::optional<double>(static_cast<double>(*big->max_khz) / mean_khz) : std::nullopt,
            "estimated: the big cores' maximum clock over the clock-weighted mean of where the threads ran",
            fmt::format("-C {} --cpu-strict 1 -t {} (pin the threads to the {} CPUs of '{}')", cpu_mask_of(big->cpus),
                        std::min(n_big, std::max(threads, 1)), n_big, big->name),
            {{"slow_share", slow_share / total_share}, {"big_cluster", big->name}}};
  out.push_back(std::move(f));
}

// ---- 5. contention ------------------------------------------------------------------
void check_contention(const Evidence& e, std::vector<Finding>& out) {
  const auto& w = e.primary.window;
  if (w.other_cpu_share && *w.other_cpu_share >= kContentionShare) {
    // The window's share counts only the CPUs the run may use (ProcessWatch::finish).
    const auto usable = usable_cpus(e.device, e.options.config);
    const double others = *w.other_cpu_share * static_cast<double>(usable.size());
    const double cost = analysis::lockstep_contention_cost(e.options.config.threads,
                                                           static_cast<double>(usable.size()), others);
    std::vector<std::string> ev = {fmt::format("other processes used {} of all CPU time while the bench ran ({:.1f} s)",
                                               pct(*w.other_cpu_share), w.wall_s)};
    json top = json::array();
    std::string names;
    for (const auto& p : w.top_others) {
      if (p.cpus < 0.05) continue;
      ev.push_back(fmt::format("  {} (pid {}): {:.2f} CPUs", p.name, p.pid, p.cpus));
      top.push_back({{"pid", p.pid}, {"name", p.name}, {"cpus", p.cpus}});
      if (names.size() < 60) names += (names.empty() ? "" : ", ") + fmt::format("{} (pid {})", p.name, p.pid);
    }
    out.push_back({"contention.other_processes", Severity::kWarning,
                   fmt::format("other processes took {} of the CPUs during the run", pct(*w.other_cpu_share)), ev, "prefill+decode",
                   cost,
                   fmt::format("estimated: the threads and the other processes ({:.2f} CPUs) sharing the {} usable CPU(s) "
                               "fairly (ggml's threads wait at barriers, so the real cost can be higher)",
                               others, usable.size()),
                   names.empty() ? "stop the competing work before measuring" : "stop or pause " + names + " while the model runs, or leave them a CPU (-t one less, -C on the rest)",
                   {{"other_cpu_share", *w.other_cpu_share}, {"top", top}}});
  }
  if (w.steal_share && *w.steal_share >= kStealShare) {
    out.push_back({"contention.steal", Severity::kWarning,
                   fmt::format("the hypervisor gave {} of this VM's CPU time to other guests", pct(*w.steal_share)), {}, "prefill+decode",
                   analysis::lost_time_cost(*w.steal_share), "estimated: stolen time", "measure on dedicated or pinned vCPUs",
                   {{"steal_share", *w.steal_share}}});
  }
}

// ---- 6. throttling ------------------------------------------------------------------
void check_cgroup(const Evidence& e, std::vector<Finding>& out) {
  const auto& cg = e.device.cgroup;
  const auto& w = e.primary.window;
  const int need = std::min<int>(e.options.config.threads, std::max<int>(1, static_cast<int>(usable_cpus(e.device, e.options.config).size())));
  const bool quota_low = cg.quota_cpus && *cg.quota_cpus < need;
  const double throttled_share = w.throttled_ms && w.wall_s > 0 ? *w.throttled_ms / (w.wall_s * 1000) : 0;
  if (!quota_low && throttled_share < kThrottledShare) return;
  std::vector<std::string> ev;
  if (cg.quota_cpus)
    ev.push_back(fmt::format("cgroup '{}' allows {:.2f} CPUs (quota {} µs per {} µs) for {} thread(s)", cg.path, *cg.quota_cpus,
                             cg.quota_us.value_or(0), cg.period_us.value_or(0), need));
  if (w.throttled_ms)
    ev.push_back(fmt::format("throttled for {:.0f} ms in {:.0f} periods during the {:.1f} s run", *w.throttled_ms, w.nr_throttled.value_or(0), w.wall_s));
  const std::string dir = cg.cpu_dir.empty() ? "<cgroup dir>" : cg.cpu_dir;
  out.push_back({"throttle.cgroup_quota", Severity::kWarning,
                 cg.quota_cpus ? fmt::format("a cgroup CPU quota of {:.2f} CPUs throttles the run", *cg.quota_cpus) : "the cgroup throttles the run",
                 ev, "prefill+decode",
                 quota_low ? std::optional<double>(analysis::quota_cost(need, need, *cg.quota_cpus))
                           : std::optional<double>(analysis::lost_time_cost(throttled_share)),
                 quota_low ? "estimated: CPUs the threads need over the quota" : "estimated: throttled time over wall time",
                 cg.version == 2 ? fmt::format("raise the quota: echo max > {}/cpu.max (docker --cpus, systemd CPUQuota=)", dir)
                                 : fmt::format("raise the quota: echo -1 > {}/cpu.cfs_quota_us (docker --cpus, systemd CPUQuota=)", dir),
                 {{"quota_cpus", cg.quota_cpus ? json(*cg.quota_cpus) : json(nullptr)}, {"throttled_ms", w.throttled_ms ? json(*w.throttled_ms) : json(nullptr)},
                  {"cgroup", cg.path}}});
}

}  // namespace edgeprobe::doctor::checks
