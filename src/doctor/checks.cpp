// The checks doctor runs, in the order of the first seed's checklist: the file, its
// precision and the kernels first (software), then threads, contention, throttling, load
// and the ceiling (hardware). Each is a pure function of the Evidence, so a test can feed
// it a measured or a fixture run alike.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "analysis/stability.h"
#include "doctor/doctor.h"

namespace edgeprobe::doctor {
namespace {

using nlohmann::json;
namespace rv = report_view;

// Thresholds, chosen so that a healthy run on a noisy 2-core VM stays quiet while the
// faults of the suite (factors of 1.3 and more) are named.
constexpr double kMinGain = 1.10;            // a measured alternative this much faster is a finding
constexpr double kContentionShare = 0.10;    // other processes' share of all CPU time
constexpr double kStealShare = 0.05;
constexpr double kThrottledShare = 0.02;     // cgroup-throttled time over wall time
constexpr double kLowClockShare = 0.85;      // mean clock under load over its maximum
constexpr double kLittleCoreShare = 0.25;    // thread-time on slower clusters
constexpr double kStepDown = 0.15;           // a decode change point at least this much slower
constexpr double kTempRise = 10;             // °C over the run
constexpr double kHotC = 80;

std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }
std::string pct(double share) { return fmt::format("{:.0f} %", share * 100); }

std::string cpu_list_text(const std::vector<int>& cpus) {
  if (cpus.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return out;
}

const json& models0(const json& report) {
  static const json empty = json::object();
  const auto& p = field(report, "provenance");
  if (!p.contains("models") || !field(p, "models").is_array() || field(p, "models").empty()) return empty;
  return field(p, "models")[0];
}

std::string identity_text(const json& m) {
  const std::string sha = text(m, "sha256");
  return fmt::format("{} ({}, {}, {:.2f} bits/weight, sha256 {})",
                     std::filesystem::path(m.value("path", "?")).filename().string(),
                     mib(num(m, "size_bytes")), m.value("quant", "?"), num(m, "bits_per_weight"),
                     sha.empty() ? "not computed" : sha.substr(0, 16) + "…");
}

// ---- 1. model identity --------------------------------------------------------------
void check_identity(const Evidence& e, std::vector<Finding>& out) {
  if (e.baseline.is_null()) return;
  const json& mine = models0(e.primary.report);
  const json& base = models0(e.baseline);
  std::vector<std::string> differences;
  const std::string a = text(mine, "sha256"), b = text(base, "sha256");
  if (!a.empty() && !b.empty() && a != b) differences.push_back("SHA-256 differs");
  if (mine.value("size_bytes", 0) != base.value("size_bytes", 0)) differences.push_back("size differs");
  if (text(mine, "quant") != text(base, "quant")) differences.push_back("quantisation differs");
  if (mine.value("n_params", 0) != base.value("n_params", 0)) differences.push_back("parameter count differs");
  if (mine.value("tensor_types", json::object()) != base.value("tensor_types", json::object()))
    differences.push_back("tensor-type histogram differs");
  if (differences.empty()) {
    if (a.empty() || b.empty()) {
      out.push_back({"identity.unverified", Severity::kInfo, "same size and tensor types as the baseline, but no SHA-256 to prove it",
                     {"this run: " + identity_text(mine), "baseline: " + identity_text(base)}, "results", std::nullopt, "",
                     "run both sides without --no-hash", {}});
    }
  } else {
    std::string what;
    for (const auto& d : differences) what += (what.empty() ? "" : ", ") + d;
    Finding f{"identity.baseline_mismatch", Severity::kCritical,
              "the model file is not the baseline's: every comparison with it is void (" + what + ")",
              {"this run: " + identity_text(mine), "baseline: " + identity_text(base)},
              "results", std::nullopt, "",
              fmt::format("use the baseline's exact file (sha256 {}) on this device, or measure a new baseline with this one",
                          b.empty() ? "unknown" : b),
              {{"differences", differences}, {"this", mine}, {"baseline", base}}};
    out.push_back(std::move(f));
  }
  const std::string my_commit = field(field(e.primary.report, "provenance"), "llama_cpp").value("commit", "");
  const std::string base_commit = field(e.baseline, "provenance").contains("llama_cpp") ? field(field(e.baseline, "provenance"), "llama_cpp").value("commit", "") : "";
  if (!my_commit.empty() && !base_commit.empty() && my_commit != base_commit) {
    out.push_back({"identity.build_differs", Severity::kWarning,
                   fmt::format("llama.cpp {} here against {} in the baseline: kernels may differ", my_commit, base_commit),
                   {}, "results", std::nullopt, "", "compare builds of the same llama.cpp commit", {}});
  }
}

// ---- 2. precision -------------------------------------------------------------------
// Bits per weight a quantisation name promises (llama.cpp's nominal figures).
std::optional<double> nominal_bits(const std::string& name) {
  // Quantised names first: "llama-q4_0-from-f16.gguf" promises q4_0.
  static const std::vector<std::pair<std::regex, double>> table = {
      {std::regex("(^|[^a-z0-9])(q2_k\\w*|iq2_\\w+|q2)([^a-z0-9]|$)"), 2.6},
      {std::regex("(^|[^a-z0-9])(q3_k\\w*|iq3_\\w+|q3)([^a-z0-9]|$)"), 3.4},
      {std::regex("(^|[^a-z0-9])(q4_[01k]\\w*|iq4_\\w+|q4|int4|4bit|4-bit|w4a\\d+)([^a-z0-9]|$)"), 4.5},
      {std::regex("(^|[^a-z0-9])(q5_[01k]\\w*|q5)([^a-z0-9]|$)"), 5.5},
      {std::regex("(^|[^a-z0-9])(q6_k|q6)([^a-z0-9]|$)"), 6.6},
      {std::regex("(^|[^a-z0-9])(q8_0|q8|int8|8bit|8-bit|w8a\\d+)([^a-z0-9]|$)"), 8.5},
      {std::regex("(^|[^a-z0-9])(f16|fp16|bf16)([^a-z0-9]|$)"), 16},
      {std::regex("(^|[^a-z0-9])(f32|fp32)([^a-z0-9]|$)"), 32}};
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& [re, bits] : table)
    if (std::regex_search(lower, re)) return bits;
  return std::nullopt;
}

// llama_ftype (general.file_type) -> (name, nominal bits); llama.h's enum.
std::optional<std::pair<std::string, double>> ftype_claim(int64_t ftype) {
  static const std::map<int64_t, std::pair<std::string, double>> table = {
      {0, {"F32", 32}},     {1, {"F16", 16}},       {2, {"Q4_0", 4.5}},    {3, {"Q4_1", 5}},     {7, {"Q8_0", 8.5}},
      {8, {"Q5_0", 5.5}},   {9, {"Q5_1", 6}},       {10, {"Q2_K", 2.6}},   {11, {"Q3_K_S", 3.4}}, {12, {"Q3_K_M", 3.9}},
      {13, {"Q3_K_L", 4.3}}, {14, {"Q4_K_S", 4.6}}, {15, {"Q4_K_M", 4.9}}, {16, {"Q5_K_S", 5.5}}, {17, {"Q5_K_M", 5.7}},
      {18, {"Q6_K", 6.6}},  {32, {"BF16", 16}}};
  auto it = table.find(ftype);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

void check_precision(const Evidence& e, std::vector<Finding>& out) {
  const auto& info = e.model;
  const double actual_bits = info.bits_per_weight();
  const std::string file = std::filesystem::path(info.path).filename().string();
  const std::string dominant = info.dominant_type();
  struct Claim {
    std::string source, text;
    double bits;
  };
  std::vector<Claim> claims;
  if (auto bits = nominal_bits(file)) claims.push_back({"file name", file, *bits});
  if (auto bits = nominal_bits(info.name)) claims.push_back({"general.name", info.name, *bits});
  if (auto c = ftype_claim(info.file_type)) claims.push_back({"general.file_type", c->first, c->second});
  for (const auto& c : claims) {
    // Real files carry a few f32/q6_K tensors: 1.6x the nominal figure leaves room for them.
    if (actual_bits <= c.bits * 1.6) continue;
    const double share = info.weight_bytes() ? static_cast<double>(info.type_histogram().at(dominant).bytes) / info.weight_bytes() : 0;
    Finding f{"precision.mismatch", Severity::kCritical,
              fmt::format("the {} says {:.1f} bits per weight but the weights are {} ({:.1f} bits per weight)", c.source,
                          c.bits, dominant, actual_bits),
              {fmt::format("{}: '{}'", c.source, c.text),
               fmt::format("{} of the weight bytes are {}; the file is {} where {:.1f}-bit weights would take {}", pct(share),
                           dominant, mib(static_cast<double>(info.file_bytes)), c.bits,
                           mib(static_cast<double>(info.n_params()) * c.bits / 8))},
              "decode", actual_bits / c.bits,
              "estimated: decode reads every weight once per token, so it scales with bits per weight",
              fmt::format("quantize the model for real (llama-quantize MODEL-f16.gguf OUT.gguf {}), or rename the file to what it holds",
                          c.bits < 5 ? "Q4_0" : c.bits < 9 ? "Q8_0" : "F16"),
              {{"claimed_bits_per_weight", c.bits}, {"claimed_by", c.source}, {"actual_bits_per_weight", actual_bits},
               {"dominant_type", dominant}}};
    out.push_back(std::move(f));
    break;  // one claim is enough to void the run
  }
}

// The seed's "7 GB where 3.5 GB was due": memory against what the weights should take.
// llama.cpp logs every buffer it allocates (with --llama-log, which doctor's children
// use), so the footprint can be checked part by part:
//  - weights copied at load (repacked or read into memory) beyond the file itself: an
//    expansion such as 4-bit weights held as f16;
//  - peak RSS beyond all declared buffers, with room for the runtime (code, libraries, the
//    sampler): memory llama.cpp does not account for.
// Without the log, only a peak above 2.5x the file is called out (mapped pages and
// repacked copies both count in RSS).
void check_memory(const Evidence& e, std::vector<Finding>& out) {
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kRuntimeAllowance = 128 * kMiB;  // binary, libllama, ggml backends, threads' stacks
  int64_t peak = -1;
  for (const auto& r : field(e.primary.report, "results")) peak = std::max<int64_t>(peak, static_cast<int64_t>(num(r, "peak_rss_bytes", -1)));
  const double file = static_cast<double>(e.model.file_bytes);
  const DeclaredMemory declared = declared_memory(field(field(e.primary.report, "provenance"), "llama_log"));
  if (declared.total() <= 0) {
    if (peak > 0 && static_cast<double>(peak) > 2.5 * file + 300 * kMiB)
      out.push_back(
          {"precision.memory_excess",
           Severity::kWarning,
           fmt::format("peak RSS {} is {:.1f}x the {} the weights take", mib(static_cast<double>(peak)),
                       peak / file, mib(file)),
           {"weights may have been expanded at load time (dequantised or copied); llama.cpp's buffer lines "
            "were not logged"},
           "memory",
           std::nullopt,
           "",
           "rerun doctor (its runs keep llama.cpp's log) or edgeprobe bench --llama-log to see the buffers",
           {{"peak_rss_bytes", peak}, {"weight_bytes", file}}});
    return;
  }
  const nlohmann::json data = {{"peak_rss_bytes", peak},
                               {"file_bytes", file},
                               {"declared_bytes", declared.bytes},
                               {"declared_total_bytes", declared.total()}};
  const double copies = declared.model_copies();
  if (copies > 1.5 * file) {
    out.push_back(
        {"precision.weights_expanded",
         Severity::kWarning,
         fmt::format("llama.cpp holds {} of weights in memory for a {} file", mib(copies), mib(file)),
         {"llama.cpp's buffers: " + declared.text(),
          "weights are copied at load beyond the file's size: expanded to a wider type, or loaded more than "
          "once"},
         "memory",
         copies / file,
         "estimated: decode reads the weights as they are held",
         "use a CPU variant with kernels for the file's type, or a file quantised to the type the kernels "
         "want",
         data});
  }
  const double allowed = 1.25 * declared.total() + kRuntimeAllowance;
  if (peak > 0 && static_cast<double>(peak) > allowed) {
    out.push_back(
        {"precision.memory_excess",
         Severity::kWarning,
         fmt::format("peak RSS {} is {} above the {} llama.cpp allocated", mib(static_cast<double>(peak)),
                     mib(static_cast<double>(peak) - declared.total()), mib(declared.total())),
         {"llama.cpp's buffers: " + declared.text(),
          fmt::format("allowed for the runtime besides them: 25 % + {}", mib(kRuntimeAllowance))},
         "memory",
         std::nullopt,
         "",
         "memory outside llama.cpp's buffers: profile the run (heaptrack, valgrind --tool=massif) to find "
         "who holds it",
         data});
  } else if (peak > 0) {
    out.push_back({"memory.footprint",
                   Severity::kInfo,
                   fmt::format("peak RSS {} for a {} file: llama.cpp's buffers account for {}",
                               mib(static_cast<double>(peak)), mib(file), mib(declared.total())),
                   {"llama.cpp's buffers: " + declared.text()},
                   "memory",
                   std::nullopt,
                   "",
                   "",
                   data});
  }
}

// ---- 3. kernel path -----------------------------------------------------------------
void check_kernel(const Evidence& e, std::vector<Finding>& out) {
  const json gap = field(e.primary.report, "provenance").value("isa_gap", json::object());
  const auto& o = e.options;
  if (gap.value("fallback", false)) {
    const std::string loaded = gap.value("loaded_variant", "?"), best = gap.value("best_variant", "?");
    std::vector<std::string> missing;
    const auto compiled = gap.value("compiled_features", std::vector<std::string>{});
    for (const auto& f : gap.value("cpu_features", std::vector<std::string>{}))
      if (std::find(compiled.begin(), compiled.end(), f) == compiled.end()) missing.push_back(f);
    std::string missing_text;
    for (const auto& m : missing) missing_text += (missing_text.empty() ? "" : " ") + m;
    Finding f{"kernel.isa_fallback", Severity::kWarning,
              fmt::format("the ggml CPU variant '{}' runs where this CPU can run '{}': the kernels fall back", loaded, best),
              {fmt::format("this CPU has, and '{}' was not built for: {}", loaded, missing_text.empty() ? "(none listed)" : missing_text)},
              "prefill+decode", std::nullopt, "", "", {{"isa_gap", gap}}};
    const Rates mine = rates(e.primary.report, o.n_prompt, o.n_gen);
    if (e.best_variant && e.best_variant->ok()) {
      const Rates fixed = rates(e.best_variant->report, o.n_prompt, o.n_gen);
      const auto a = turn_s(mine, o.n_prompt, o.n_gen), b = turn_s(fixed, o.n_prompt, o.n_gen);
      f.evidence.push_back(fmt::format("'{}': {}; '{}': {} (measured, same test)", loaded, rates_text(mine), best, rates_text(fixed)));
      if (a && b) {
        f.speedup = *a / *b;
        f.speedup_basis = fmt::format("measured: the same test with the '{}' variant", best);
      }
      f.data["measured"] = {{"as_configured", to_json(mine)}, {"best_variant", to_json(fixed)}};
    } else if (e.best_variant) {
      f.evidence.push_back("the best variant could not be measured: " + e.best_variant->error);
    }
    f.fix = o.config.cpu_variant.empty()
                ? fmt::format("install libggml-cpu-{}.so beside libggml.so (build llama.cpp with GGML_BACKEND_DL=ON GGML_CPU_ALL_VARIANTS=ON, or GGML_NATIVE=ON on this device)", best)
                : fmt::format("drop --cpu-variant {} (edgeprobe loads the best variant, '{}'); in llama.cpp keep libggml-cpu-{}.so beside libggml.so", o.config.cpu_variant, best, best);
    out.push_back(std::move(f));
  }
  // llama.cpp's own words: fallbacks and unsupported operations it logged.
  static const std::regex alarming("fall(ing)? ?back|not supported|unsupported|cannot use|failed", std::regex::icase);
  std::vector<std::string> lines;
  std::string repack;
  for (const auto& l : field(e.primary.report, "provenance").value("llama_log", json::array())) {
    const std::string line = text(l, "text");
    if (line.find("CPU_REPACK model buffer size") != std::string::npos) repack = line.substr(line.find("CPU_REPACK"));
    if ((num(l, "level") >= 3 || std::regex_search(line, alarming)) && lines.size() < 8) lines.push_back(line);
  }
  if (!lines.empty()) {
    out.push_back({"kernel.log_messages", Severity::kWarning, fmt::format("llama.cpp logged {} warning or fallback line(s)", lines.size()),
                   lines, "prefill+decode", std::nullopt, "", "read the lines above; rerun with 'edgeprobe bench -v' for the whole log",
                   {{"lines", lines}}});
  }
  const auto unused = gap.value("unused_features", std::vector<std::string>{});
  if (!gap.value("fallback", false) && !text(gap, "loaded_variant").empty()) {
    std::vector<std::string> ev = {text(gap, "summary")};
    if (!repack.empty()) ev.push_back("weights repacked for this variant's kernels: " + repack);
    out.push_back({"kernel.variant", Severity::kInfo, fmt::format("the best ggml CPU variant for this CPU ran ('{}')", text(gap, "loaded_variant")),
                   ev, "prefill+decode", std::nullopt, "",
                   unused.empty() ? "" : "features no prebuilt variant uses need a native build (GGML_NATIVE=ON)", {{"isa_gap", gap}}});
  }
}

// ---- 4. threads ---------------------------------------------------------------------
void check_threads(const Evidence& e, std::vector<Finding>& out) {
  const auto& o = e.options;
  const auto usable = usable_cpus(e.device, o.config);
  const int threads = o.config.threads;
  const Rates mine = rates(e.primary.report, o.n_prompt, o.n_gen);
  const auto mine_s = turn_s(mine, o.n_prompt, o.n_gen);

  // The sweep: the fastest thread count measured, against the configured one.
  int best_t = threads;
  double best_s = mine_s.value_or(0);
  std::vector<std::string> table = {fmt::format("-t {}: {} (as configured)", threads, rates_text(mine))};
  json sweep = json::array({{{"threads", threads}, {"rates", to_json(mine)}}});
  std::vector<std::pair<int, double>> by_count;
  if (mine_s) by_count.push_back({threads, *mine_s});
  if (e.thread_sweep && e.thread_sweep->ok()) {
    std::set<int> counts;
    for (const auto& r : field(e.thread_sweep->report, "results")) counts.insert(field(r, "config").value("n_threads", 0));
    for (int t : counts) {
      const Rates r = rates(e.thread_sweep->report, o.n_prompt, o.n_gen, "n_threads", t);
      table.push_back(fmt::format("-t {}: {}", t, rates_text(r)));
      sweep.push_back({{"threads", t}, {"rates", to_json(r)}});
      if (auto s = turn_s(r, o.n_prompt, o.n_gen)) {
        by_count.push_back({t, *s});
        if (mine_s && *s < best_s) {
          best_s = *s;
          best_t = t;
        }
      }
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
  const std::optional<double> measured_gain = mine_s && best_t != threads ? std::optional<double>(*mine_s / best_s) : std::nullopt;

  if (threads > static_cast<int>(usable.size())) {
    Finding f{"threads.oversubscribed", Severity::kWarning,
              fmt::format("{} threads on {} usable CPU(s): threads wait for each other at every barrier", threads, usable.size()),
              {fmt::format("usable CPUs: {} (affinity {}{}{})", cpu_list_text(usable), cpu_list_text(e.device.affinity),
                           e.device.cgroup.cpuset.empty() ? "" : ", cgroup cpuset " + cpu_list_text(e.device.cgroup.cpuset),
                           o.config.cpu_mask.empty() ? "" : ", -C " + o.config.cpu_mask)},
              "prefill+decode", std::nullopt, "", "", {{"usable_cpus", usable}, {"threads", threads}, {"sweep", sweep}}};
    for (const auto& t : table) f.evidence.push_back(t);
    if (measured_gain) {
      f.speedup = *measured_gain;
      f.speedup_basis = fmt::format("measured: -t {} against -t {}", best_t, threads);
    }
    const int fix_t = measured_gain ? best_t : std::max<int>(1, static_cast<int>(usable.size()));
    f.fix = fmt::format("-t {}{}", fix_t, o.config.cpu_mask.empty() ? "" : " (or widen -C to more CPUs)");
    out.push_back(std::move(f));
  } else if (measured_gain && *measured_gain >= kMinGain) {
    Finding f{"threads.count", Severity::kWarning,
              fmt::format("-t {} is {:.2f}x faster than the configured -t {}", best_t, *measured_gain, threads),
              table, "prefill+decode", measured_gain, fmt::format("measured: -t {} against -t {}", best_t, threads),
              fmt::format("-t {}", best_t), {{"sweep", sweep}, {"anomalies", anomalies}}};
    for (const auto& a : anomalies) f.evidence.push_back("more threads is slower: " + a);
    out.push_back(std::move(f));
  } else if (!anomalies.empty() || by_count.size() > 1) {
    Finding f{"threads.scaling", Severity::kInfo, "thread scaling measured; the configured count is the fastest or within noise",
              table, "prefill+decode", std::nullopt, "", "", {{"sweep", sweep}, {"anomalies", anomalies}}};
    for (const auto& a : anomalies) f.evidence.push_back("more threads is slower, for counts not configured: " + a);
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
  const json* result = rv::find_result(e.primary.report, fmt::format("tg{}", o.n_gen));
  if (!result) result = rv::find_result(e.primary.report, fmt::format("pp{}", o.n_prompt));
  if (!result) return;
  std::map<std::string, double> share_by_cluster;
  double weight = 0;
  for (const auto& rep : field((*result), "repetitions")) {
    for (const char* phase : {"prefill", "decode"}) {
      if (!field(rep, "telemetry").is_object() || !field(rep, "telemetry").contains(phase)) continue;
      const auto& p = field(field(rep, "telemetry"), phase);
      const double ms = num(p, "duration_ms");
      for (const auto& c : p.value("clusters", json::array()))
        if (c.contains("thread_time_share") && field(c, "thread_time_share").is_number())
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
                   1.0 / (1.0 - std::min(*w.other_cpu_share, 0.9)),
                   "estimated: the CPU time the other processes took (ggml's threads wait at barriers, so the real cost is often higher)",
                   names.empty() ? "stop the competing work before measuring" : "stop or pause " + names + " while the model runs, or leave them a CPU (-t one less, -C on the rest)",
                   {{"other_cpu_share", *w.other_cpu_share}, {"top", top}}});
  }
  if (w.steal_share && *w.steal_share >= kStealShare) {
    out.push_back({"contention.steal", Severity::kWarning,
                   fmt::format("the hypervisor gave {} of this VM's CPU time to other guests", pct(*w.steal_share)), {}, "prefill+decode",
                   1.0 / (1.0 - std::min(*w.steal_share, 0.9)), "estimated: stolen time", "measure on dedicated or pinned vCPUs",
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
                 quota_low ? std::optional<double>(need / *cg.quota_cpus)
                           : std::optional<double>(1.0 / std::max(0.1, 1.0 - throttled_share)),
                 quota_low ? "estimated: CPUs the threads need over the quota" : "estimated: throttled time over wall time",
                 cg.version == 2 ? fmt::format("raise the quota: echo max > {}/cpu.max (docker --cpus, systemd CPUQuota=)", dir)
                                 : fmt::format("raise the quota: echo -1 > {}/cpu.cfs_quota_us (docker --cpus, systemd CPUQuota=)", dir),
                 {{"quota_cpus", cg.quota_cpus ? json(*cg.quota_cpus) : json(nullptr)}, {"throttled_ms", w.throttled_ms ? json(*w.throttled_ms) : json(nullptr)},
                  {"cgroup", cg.path}}});
}

void check_clock_and_heat(const Evidence& e, std::vector<Finding>& out) {
  const auto& o = e.options;
  const json* tg = rv::find_result(e.primary.report, fmt::format("tg{}", o.n_gen));
  const json* pp = rv::find_result(e.primary.report, fmt::format("pp{}", o.n_prompt));
  // Per cluster: duration-weighted mean clock share and lowest cap during prefill+decode,
  // on the clusters that held at least a fifth of the thread-time (or all when unknown).
  struct Acc {
    double share_sum = 0, ms = 0, min_cap = 1, thread_share = 0, thread_ms = 0;
    bool thread_known = false;
  };
  std::map<std::string, Acc> acc;
  double first_temp = NAN, max_temp = NAN;
  std::string hottest;
  for (const json* r : {pp, tg}) {
    if (!r) continue;
    for (const auto& rep : field((*r), "repetitions")) {
      for (const char* phase : {"prefill", "decode"}) {
        if (!field(rep, "telemetry").is_object() || !field(rep, "telemetry").contains(phase)) continue;
        const auto& p = field(field(rep, "telemetry"), phase);
        const double ms = num(p, "duration_ms");
        for (const auto& c : p.value("clusters", json::array())) {
          auto& a = acc[text(c, "name")];
          if (c.contains("mean_freq_share") && field(c, "mean_freq_share").is_number()) {
            a.share_sum += field(c, "mean_freq_share").get<double>() * ms;
            a.ms += ms;
          }
          if (c.contains("min_cap_share") && field(c, "min_cap_share").is_number()) a.min_cap = std::min(a.min_cap, field(c, "min_cap_share").get<double>());
          if (c.contains("thread_time_share") && field(c, "thread_time_share").is_number()) {
            a.thread_known = true;
            a.thread_share += field(c, "thread_time_share").get<double>() * ms;
            a.thread_ms += ms;
          }
        }
        const json thermal = p.value("thermal", json::object());
        for (const auto& [zone, t] : thermal.items()) {
          const double m = num(t, "max_temp_c", NAN);
          if (std::isnan(first_temp)) first_temp = num(t, "mean_temp_c", m);
          if (std::isnan(max_temp) || m > max_temp) {
            max_temp = m;
            hottest = zone;
          }
        }
      }
    }
  }
  const bool hot = !std::isnan(max_temp) && (max_temp >= kHotC || (!std::isnan(first_temp) && max_temp - first_temp >= kTempRise));
  for (const auto& [name, a] : acc) {
    if (a.ms <= 0) continue;
    if (a.thread_known && a.thread_ms > 0 && a.thread_share / a.thread_ms < 0.2) continue;
    const double share = a.share_sum / a.ms;
    if (share >= kLowClockShare) continue;
    const telemetry::Cluster* cluster = nullptr;
    for (const auto& c : e.device.cpus.clusters)
      if (c.name == name) cluster = &c;
    const std::string governor = cluster ? cluster->governor : "";
    std::string driver;
    if (cluster && !cluster->policies.empty()) driver = e.device.cpus.policies[cluster->policies[0]].driver;
    // intel_pstate / amd-pstate-epp "powersave" is their normal dynamic mode, not a cap.
    const bool pstate = driver.find("pstate") != std::string::npos;
    const bool saving_governor = governor == "powersave" && !pstate ? true : governor == "conservative" || governor == "userspace";
    std::vector<std::string> ev = {fmt::format("cluster {} ran at {} of its maximum clock on average under load", name, pct(share))};
    if (a.min_cap < 0.98) ev.push_back(fmt::format("its scaling_max_freq was capped to {} of the maximum", pct(a.min_cap)));
    if (!governor.empty()) ev.push_back(fmt::format("governor '{}'{}", governor, driver.empty() ? "" : " (driver " + driver + ")"));
    if (!std::isnan(max_temp)) ev.push_back(fmt::format("hottest zone {}: {:.1f} °C (from {:.1f} °C)", hottest, max_temp, first_temp));
    Finding f{"", Severity::kWarning, "", ev, "prefill+decode", 1.0 / std::max(share, 0.05),
              "estimated: maximum clock over the mean clock under load (an upper bound: memory-bound decode gains less)", "",
              {{"cluster", name}, {"mean_freq_share", share}, {"min_cap_share", a.min_cap}, {"governor", governor},
               {"max_temp_c", std::isnan(max_temp) ? json(nullptr) : json(max_temp)}}};
    if (a.min_cap < 0.98 && hot) {
      f.id = "throttle.thermal";
      f.title = fmt::format("thermal throttling: '{}' capped to {} of its clock at {:.0f} °C", name, pct(a.min_cap), max_temp);
      f.fix = "cool the device (no case, a fan or cold plate), add --delay between tests, or use a lighter quantisation";
    } else if (saving_governor) {
      f.id = "power.governor";
      f.title = fmt::format("the '{}' governor holds '{}' at {} of its clock under load", governor, name, pct(share));
      f.fix = cluster && !cluster->policies.empty()
                  ? fmt::format("echo performance > {}/scaling_governor (as root; on a phone: leave battery saver, use a performance mode)",
                                e.device.cpus.policies[cluster->policies[0]].dir)
                  : "set the performance governor (cpupower frequency-set -g performance); on a phone: leave battery saver";
    } else if (a.min_cap < 0.98) {
      f.id = "throttle.power_cap";
      f.title = fmt::format("the clock of '{}' is capped to {} of its maximum", name, pct(a.min_cap));
      f.fix = "find what lowers scaling_max_freq (thermal daemon, power profile, battery saver) and lift it";
    } else {
      f.id = "throttle.clock";
      f.title = fmt::format("'{}' ran at {} of its maximum clock under load", name, pct(share));
      f.fix = "set the performance governor or a performance power profile while measuring";
    }
    out.push_back(std::move(f));
  }
  if (hot && std::none_of(out.begin(), out.end(), [](const Finding& f) { return f.id == "throttle.thermal"; })) {
    out.push_back({"thermal.hot", Severity::kInfo, fmt::format("{} reached {:.1f} °C during the run", hottest, max_temp),
                   {fmt::format("from {:.1f} °C", first_temp)}, "prefill+decode", std::nullopt, "",
                   "watch for throttling in longer runs (edgeprobe session); --delay lets the device cool between tests", {}});
  }
}

// Decode that steps down within the run: PELT on the per-token latencies of all the
// repetitions in order, tied to that repetition's telemetry.
void check_decode_steps(const Evidence& e, std::vector<Finding>& out) {
  const json* tg = rv::find_result(e.primary.report, fmt::format("tg{}", e.options.n_gen));
  if (!tg) return;
  std::vector<double> steps;
  std::vector<size_t> rep_of_step;
  for (size_t i = 0; i < field((*tg), "repetitions").size(); ++i)
    for (const auto& ms : field((*tg), "repetitions")[i].value("decode_step_ms", std::vector<double>{})) {
      steps.push_back(ms);
      rep_of_step.push_back(i);
    }
  if (steps.size() < 16) return;
  for (const auto& cp : analysis::detect_change_points(steps)) {
    // Latency up = throughput down.
    if (cp.mean_before <= 0 || cp.mean_after / cp.mean_before - 1 < kStepDown) continue;
    const size_t rep = rep_of_step[cp.index];
    const auto& t = field(field((*tg), "repetitions")[rep], "telemetry");
    std::vector<std::string> ev = {fmt::format("per-token latency rose from {:.2f} to {:.2f} ms at token {} of {} (repetition {})",
                                               cp.mean_before, cp.mean_after, cp.index, steps.size(), rep + 1)};
    bool explained = false;
    if (t.is_object() && t.contains("decode")) {
      const auto& d = field(t, "decode");
      if (num(d, "throttled_ms") > 0) {
        explained = true;
        ev.push_back(fmt::format("that repetition was cgroup-throttled for {:.0f} ms", num(d, "throttled_ms")));
      }
      if (num(d, "other_cpu_share") >= kContentionShare) {
        explained = true;
        ev.push_back(fmt::format("other processes took {} of the CPUs then", pct(num(d, "other_cpu_share"))));
      }
      for (const auto& c : d.value("clusters", json::array()))
        if (c.contains("min_freq_share") && field(c, "min_freq_share").is_number() && field(c, "min_freq_share").get<double>() < kLowClockShare) {
          explained = true;
          ev.push_back(fmt::format("cluster {}'s clock fell to {} of its maximum", text(c, "name"), pct(field(c, "min_freq_share").get<double>())));
        }
    }
    if (!explained) ev.push_back("this device's telemetry shows no cause at that moment (a noisy host?)");
    // Named on its own only when no finding above already names its cause: then it is a
    // symptom of that one, listed for the moment it struck.
    const bool cause_named = std::any_of(out.begin(), out.end(), [](const Finding& f) {
      return f.severity != Severity::kInfo && (f.id.starts_with("contention.") || f.id.starts_with("throttle.") ||
                                               f.id.starts_with("power.") || f.id.starts_with("thermal."));
    });
    if (explained && cause_named) ev.push_back("a symptom of the finding above that names this cause");
    out.push_back({"throttle.decode_step_down", explained && !cause_named ? Severity::kWarning : Severity::kInfo,
                   fmt::format("decode slowed by {} partway through the run (x{:.2f} per-token latency)", pct(cp.mean_after / cp.mean_before - 1),
                               cp.mean_after / cp.mean_before),
                   ev, "decode", std::nullopt, "",
                   explained ? "fix the cause named above" : "repeat the measurement; if it recurs, trace it (edgeprobe bench --trace)",
                   {{"index", cp.index}, {"mean_before_ms", cp.mean_before}, {"mean_after_ms", cp.mean_after}}});
    break;
  }
}

// ---- 7. load ------------------------------------------------------------------------
void check_load(const Evidence& e, std::vector<Finding>& out) {
  const json* r = rv::find_result(e.primary.report, fmt::format("pp{}", e.options.n_prompt));
  if (!r) r = rv::find_result(e.primary.report, fmt::format("tg{}", e.options.n_gen));
  if (!r || !field((*r), "load").is_object()) return;
  const auto& load = field((*r), "load");
  const double cold = num(load, "cold_ms");
  const double resident = num(load, "page_cache_resident_share_before", -1.0);
  const double warm = field(load, "warm_ms").is_object() ? num(field(load, "warm_ms"), "median") : 0.0;
  const auto& roof = field((*r), "roofline");
  const double ceiling_ms = roof.is_object() ? num(roof, "load_ceiling_ms") : 0.0;
  std::vector<std::string> ev;
  ev.push_back(fmt::format("first load {:.0f} ms with {} of the file in the page cache before it{}", cold,
                           resident >= 0 ? pct(resident) : "an unknown share", warm > 0 ? fmt::format("; warm loads {:.0f} ms", warm) : ""));
  if (ceiling_ms > 0) ev.push_back(fmt::format("storage ceiling for the file: {:.0f} ms ({})", ceiling_ms, text(roof, "load_ceiling_basis")));
  if (!e.options.config.use_mmap) {
    const bool cold_cache = resident >= 0 && resident < 0.5;
    Finding f{"load.no_mmap", cold_cache ? Severity::kWarning : Severity::kInfo,
              cold_cache ? "the model is read without mmap from a cold page cache: the first load reads the whole file from storage"
                         : "the model is read without mmap: every process keeps its own copy of the weights",
              ev, "load", std::nullopt, "",
              "drop -mmp 0 / --mmap 0 (llama.cpp: drop --no-mmap) so processes share the page cache, and keep the file cached "
              "(read it once at start-up, e.g. vmtouch -t) where the first load matters",
              {{"cold_ms", cold}, {"warm_ms", warm}, {"resident_share_before", resident}}};
    double best_ms = warm;
    if (e.with_mmap && e.with_mmap->ok()) {
      const auto& results = field(e.with_mmap->report, "results");
      const double mmap_ms = results.is_array() && !results.empty() ? field(field(results[0], "load"), "cold_ms").is_number()
                                                                         ? field(field(results[0], "load"), "cold_ms").get<double>()
                                                                         : 0.0
                                                                   : 0.0;
      if (mmap_ms > 0) {
        f.evidence.push_back(fmt::format("with mmap the same file loaded in {:.0f} ms (measured, page cache warm by then)", mmap_ms));
        f.data["mmap_ms"] = mmap_ms;
        if (best_ms <= 0 || mmap_ms < best_ms) best_ms = mmap_ms;
        const int64_t rss_mmap = field(results[0], "peak_rss_bytes").is_number() ? field(results[0], "peak_rss_bytes").get<int64_t>() : -1;
        const int64_t rss_copy = field(*r, "peak_rss_bytes").is_number() ? field(*r, "peak_rss_bytes").get<int64_t>() : -1;
        if (rss_mmap > 0 && rss_copy > 0)
          f.evidence.push_back(fmt::format("peak RSS {} without mmap, {} with it", mib(static_cast<double>(rss_copy)), mib(static_cast<double>(rss_mmap))));
      }
    }
    if (cold_cache && best_ms > 0 && cold > best_ms) {
      f.speedup = cold / best_ms;
      f.speedup_basis = "measured: the first load as configured against the fastest warm load measured";
    }
    out.push_back(std::move(f));
  } else if (resident >= 0 && resident < 0.5 && warm > 0 && cold > 1.5 * warm) {
    out.push_back({"load.cold_cache", Severity::kInfo,
                   fmt::format("the first load read the file from storage: {:.0f} ms against {:.0f} ms warm", cold, warm), ev, "load",
                   cold / warm, "measured: cold against warm load", "expected on a first run; keep the file cached (vmtouch) where start-up matters",
                   {{"cold_ms", cold}, {"warm_ms", warm}}});
  }
}

// ---- 8. ceiling ---------------------------------------------------------------------
void check_ceiling(const Evidence& e, std::vector<Finding>& out) {
  const auto& o = e.options;
  std::vector<std::string> ev;
  json data = json::object();
  for (const auto& [test, key, label] : {std::tuple{fmt::format("tg{}", o.n_gen), "decode_efficiency", "decode"},
                                         std::tuple{fmt::format("pp{}", o.n_prompt), "prefill_efficiency", "prefill"}}) {
    const json* r = rv::find_result(e.primary.report, test);
    if (!r || !field((*r), "roofline").is_object()) continue;
    const auto& roof = field((*r), "roofline");
    if (!roof.contains(key) || !field(roof, key).is_number()) continue;
    const double eff = field(roof, key).get<double>();
    data[label] = roof;
    if (std::string(label) == "decode") {
      std::string basis = fmt::format("{:.1f} GB/s ÷ {} per token", num(roof, "bandwidth_gb_per_s"), mib(num(roof, "decode_bytes_per_token")));
      const std::string bound = text(roof, "decode_bound");
      if (!bound.empty()) basis += ", bound: " + bound;
      if (bound == "kernel" && field(roof, "decode_bandwidth_efficiency").is_number())
        basis += fmt::format("; {:.0f} % of memory bandwidth alone", num(roof, "decode_bandwidth_efficiency") * 100);
      ev.push_back(fmt::format("decode: {:.0f} % of the ceiling {:.1f} t/s ({})", eff * 100, num(roof, "decode_ceiling_tokens_per_s"), basis));
    } else {
      ev.push_back(fmt::format("prefill: {:.0f} % of the ceiling {:.1f} t/s ({:.1f} GFLOP/s achieved)", eff * 100,
                               num(roof, "prefill_ceiling_tokens_per_s"), num(roof, "prefill_achieved_gflop_per_s")));
    }
  }
  if (ev.empty()) {
    ev.push_back("no device ceilings: run 'edgeprobe probe' once (bench measures them with --ceilings auto)");
  }
  out.push_back({"ceiling.efficiency", Severity::kInfo, "what is left against this device's measured ceilings once the findings above are fixed",
                 ev, "prefill+decode", std::nullopt, "", "", data});
}

}  // namespace

std::vector<Finding> diagnose(const Evidence& e) {
  std::vector<Finding> out;
  check_identity(e, out);
  check_precision(e, out);
  check_memory(e, out);
  check_kernel(e, out);
  check_threads(e, out);
  check_contention(e, out);
  check_cgroup(e, out);
  check_clock_and_heat(e, out);
  check_decode_steps(e, out);
  check_load(e, out);
  check_ceiling(e, out);
  // A thread count measured faster while something else held the CPUs is a symptom: the
  // other processes or the quota are the cause, and fixing them changes the best count.
  const bool cpu_taken = std::any_of(out.begin(), out.end(), [](const Finding& f) {
    return f.id == "contention.other_processes" || f.id == "throttle.cgroup_quota" || f.id == "contention.steal";
  });
  for (auto& f : out) {
    if (f.id != "threads.count" || !cpu_taken) continue;
    f.severity = Severity::kInfo;
    f.evidence.push_back("measured while other processes or a quota held the CPUs: fix that first, then measure again");
  }
  return out;
}

}  // namespace edgeprobe::doctor
