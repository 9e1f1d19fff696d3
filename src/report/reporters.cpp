#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <ostream>
#include <set>

#include "analysis/contamination.h"
#include "analysis/greedy_check.h"
#include "core/error.h"
#include "core/stats.h"
#include "core/text.h"
#include "report/formats.h"
#include "report/json_cells.h"
#include "report/reporter.h"

namespace edgeprobe::report {
namespace {

using nlohmann::json;


std::string number(const json& v, int decimals) {
  if (!v.is_number()) return "";
  return fmt::format("{:.{}f}", v.get<double>(), decimals);
}
std::string number(const std::optional<double>& v, int decimals) { return v ? fmt::format("{:.{}f}", *v, decimals) : ""; }


// "123.45 ± 1.20" from a stats summary, "123.45" for one sample (it has no deviation), or
// "" when that phase did not run.
std::string median_pm(const json& summary, int decimals) {
  if (!summary.is_object() || summary.value("n", 0) == 0 || !summary["median"].is_number()) return "";
  const json& sd = summary.contains("stddev") ? summary["stddev"] : json();
  if (!sd.is_number()) return fmt::format("{:.{}f}", summary["median"].get<double>(), decimals);
  return fmt::format("{:.{}f} ± {:.{}f}", summary["median"].get<double>(), decimals, sd.get<double>(), decimals);
}

std::string mib(const json& bytes) {
  return bytes.is_number() ? fmt::format("{:.0f}", bytes.get<double>() / (1024.0 * 1024.0)) : "";
}

// Share of the device's measured ceiling, "" when the phase did not run, "n/a" when the
// ceiling is unknown, "ceiling suspect" when the rate beat its ceiling (probe/roofline.h).
// "contended" when the ceiling was measured, but only while other processes held the CPUs
// (the roofline's notes say so): that is no ceiling, and not the same as none measured.
std::string efficiency(const json& share, bool ran, bool suspect, bool contended = false) {
  if (!ran) return "";
  if (suspect) return "ceiling suspect";
  if (share.is_number() && share.get<double>() > 0) return fmt::format("{:.0f}%", 100 * share.get<double>());
  return contended ? "contended" : "n/a";
}

bool ceiling_contended(const json& roofline) {
  for (const auto& note : at(roofline, "/notes").is_array() ? at(roofline, "/notes") : json::array())
    if (note.is_string() && note.get<std::string>().find("while other processes held the CPUs") != std::string::npos) return true;
  return false;
}

bool flag(const json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_boolean() && object[key].get<bool>();
}

// Which limit binds decode and the share of pure memory bandwidth reached, "kernel (49% bw)";
// "" when the phase did not run, "n/a" when unknown.
std::string decode_bound(const json& roofline, bool ran) {
  if (!ran) return "";
  const json& bound = roofline.is_object() && roofline.contains("decode_bound") ? roofline["decode_bound"] : json();
  if (!bound.is_string()) return "n/a";
  const json& bw = roofline.contains("decode_bandwidth_efficiency") ? roofline["decode_bandwidth_efficiency"] : json();
  if (flag(roofline, "decode_cache_resident")) return bound.get<std::string>() + " (fits LLC)";
  return bound.get<std::string>() +
         (bw.is_number() && bw.get<double>() > 0 ? fmt::format(" ({:.0f}% bw)", 100 * bw.get<double>()) : "");
}

std::string human_params(const json& n) {
  if (!n.is_number()) return "";
  const double v = n.get<double>();
  return v >= 1e9 ? fmt::format("{:.2f} B", v / 1e9) : fmt::format("{:.2f} M", v / 1e6);
}

// One phase's telemetry over a test's repetitions, for the table columns: the slowest
// cluster's mean frequency share and other processes' CPU share (medians over
// repetitions), the hottest zone, the cgroup-throttled time (summed), energy and power
// (medians). A figure no repetition measured is left out, so it shows as "n/a" or an
// empty cell, never as zero.
json phase_telemetry(const result::TestResult& r, const char* phase) {
  std::vector<double> freq, other, energy, power;
  std::optional<double> max_temp, throttled;
  for (const auto& rep : r.repetitions) {
    if (!rep.telemetry.is_object() || !rep.telemetry.contains(phase) || !rep.telemetry[phase].is_object()) continue;
    const json& t = rep.telemetry[phase];
    std::optional<double> slowest;
    const json clusters = t.contains("clusters") && t["clusters"].is_array() ? t["clusters"] : json::array();
    const json thermal = t.contains("thermal") && t["thermal"].is_object() ? t["thermal"] : json::object();
    for (const auto& c : clusters)
      if (c.contains("mean_freq_share") && c["mean_freq_share"].is_number())
        slowest = std::min(slowest.value_or(1e9), c["mean_freq_share"].get<double>());
    if (slowest) freq.push_back(*slowest);
    for (const auto& [zone, z] : thermal.items())
      if (z.contains("max_temp_c") && z["max_temp_c"].is_number())
        max_temp = std::max(max_temp.value_or(-1e9), z["max_temp_c"].get<double>());
    if (t.contains("throttled_ms") && t["throttled_ms"].is_number())
      throttled = throttled.value_or(0) + t["throttled_ms"].get<double>();
    if (t.contains("other_cpu_share") && t["other_cpu_share"].is_number()) other.push_back(t["other_cpu_share"].get<double>());
    if (t.contains("energy_j") && t["energy_j"].is_number()) energy.push_back(t["energy_j"].get<double>());
    if (t.contains("mean_power_w") && t["mean_power_w"].is_number()) power.push_back(t["mean_power_w"].get<double>());
  }
  json out = json::object();
  if (!freq.empty()) out["freq_share"] = stats::quantile(freq, 0.5);
  if (max_temp) out["max_temp_c"] = *max_temp;
  if (throttled) out["throttled_ms"] = *throttled;
  if (!other.empty()) out["other_cpu_share"] = stats::quantile(other, 0.5);
  if (!energy.empty()) out["energy_j"] = stats::quantile(energy, 0.5);
  if (!power.empty()) out["mean_power_w"] = stats::quantile(power, 0.5);
  return out;
}

// A label per model that tells the rows apart: its general.name where those are unique, else
// the file name, else the whole path (two sweeps of files named alike).
std::vector<std::string> model_labels(const json& models) {
  std::vector<std::string> names, files, paths;
  for (const auto& m : models) {
    const std::string path = m.value("path", "");
    const std::string name = m.value("name", "");
    paths.push_back(path);
    files.push_back(path.substr(path.find_last_of('/') + 1));
    names.push_back(name.empty() ? files.back() : name);
  }
  auto unique = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) == v.end();
  };
  return unique(names) ? names : unique(files) ? files : paths;
}

std::string share_text(const json& v) { return v.is_number() ? fmt::format("{:.0f}%", 100 * v.get<double>()) : "n/a"; }

// What stands in an efficiency's place when it is not a figure, for the CSV's note columns.
json efficiency_notes(const json& roofline) {
  json notes = json::object();
  const std::string again =
      at(roofline, "/remeasure_command").is_string() ? " (" + at(roofline, "/remeasure_command").get<std::string>() + ")" : "";
  if (flag(roofline, "prefill_ceiling_suspect")) notes["prefill_efficiency"] = "ceiling suspect" + again;
  if (flag(roofline, "decode_ceiling_suspect")) notes["decode_efficiency"] = "ceiling suspect" + again;
  return notes;
}

std::string test_prefill_path(const result::TestResult& r) {
  std::vector<const json*> records;
  for (const auto& rep : r.repetitions) records.push_back(&rep.prefill_remote);
  return report::prefill_path(records);
}

// bench --draft under the table: the speed-up over plain decoding of the same run, the
// acceptance, where the time went, and whether the tokens stayed plain decoding's.
std::vector<std::string> speculative_lines(const std::string& test, const result::Speculative& s) {
  const auto sum = result::summarize(s);
  const std::string draft = s.draft.path.substr(s.draft.path.find_last_of('/') + 1);
  std::string positions;
  for (const auto& p : s.positions)
    positions += p.drafted > 0 ? fmt::format(" {:.2f}", static_cast<double>(p.accepted) / p.drafted) : " -";
  std::vector<std::string> lines;
  lines.push_back(
      fmt::format("{}: draft {} (up to {} tokens{}): decode {:.1f} -> {:.1f} t/s, x{:.2f} over plain "
                  "decoding (median of {} interleaved pairs, x{:.2f} to x{:.2f})",
                  test, draft, s.draft_max, s.draft_min > 0 ? fmt::format(", at least {}", s.draft_min) : "",
                  sum.plain_tokens_per_s, sum.spec_tokens_per_s, sum.speed_up, s.pairs.size(),
                  sum.speed_up_min, sum.speed_up_max));
  lines.push_back(
      fmt::format("{}: acceptance {:.1f} % ({} of {} draft tokens), {:.2f} accepted per verify step "
                  "({} steps, {} without a draft); per position:{}",
                  test, 100 * s.acceptance_rate(), s.accepted, s.drafted, s.mean_accepted(), s.verify_steps,
                  s.plain_steps, positions));
  lines.push_back(fmt::format(
      "{}: time: draft {:.1f} %, target (verify) {:.1f} %, overhead {:.1f} %, unaccounted {:.1f} "
      "%; {}",
      test, 100 * sum.draft_share, 100 * sum.verify_share, 100 * sum.overhead_share,
      100 * sum.unaccounted_share,
      s.identical()
          ? "tokens identical to plain decoding in every pair (" + analysis::continuation_line(s.check) + ")"
          : "TOKENS DIFFER from plain decoding (" + analysis::continuation_line(s.check) + ")"));
  return lines;
}

// The markdown table: median ± sd first (what a reader compares), then the latency tail.
class MarkdownReporter : public Reporter {
 public:
  explicit MarkdownReporter(std::ostream& out) : out_(out) {}

  void begin(const result::Provenance& provenance, const std::vector<workload::TestCase>& plan) override {
    provenance_ = result::to_json(provenance);
    model_labels_ = model_labels(provenance_["models"]);
    varied_ = workload::varied_parameters(plan);
    headers_ = {"model", "size MiB", "params", "quant", "ggml cpu", "threads"};
    for (const auto& v : varied_)
      if (v != "model") headers_.push_back(v);
    headers_.push_back("test");
    // --prefill-remote: which prefills ran on the server and which fell back to this node.
    remote_prefill_ = at(provenance_, "/prefill_remote").is_string();
    if (remote_prefill_) headers_.push_back("prefill");
    for (const char* h : {"prefill t/s", "decode t/s", "ttft ms", "token p50/p99 ms", "load ms", "peak RSS MiB",
                          "efficiency pp / tg", "tg bound", "tg freq share", "max °C", "throttled ms",
                          "other CPU"})
      headers_.push_back(h);
    row(headers_);
    std::vector<std::string> rule;
    for (const auto& h : headers_) rule.push_back(std::string(std::max<size_t>(3, h.size()), '-'));
    row(rule);
  }

  void add(const result::TestResult& r) override {
    const json j = result::to_json(r);
    const json& model = provenance_["models"][static_cast<size_t>(r.model_index)];
    std::vector<std::string> cells = {
        model_labels_.at(static_cast<size_t>(r.model_index)),
        mib(model["size_bytes"]), human_params(model["n_params"]), model.value("quant", ""),
        provenance_["engine"].value("cpu_variant", ""), threads_cell(provenance_, r.config.n_threads)};
    for (const auto& v : varied_)
      if (v != "model") cells.push_back(scalar(at(j, ("/config/" + config_key(v)).c_str())));
    if (r.error) {
      cells.push_back(j["test"].get<std::string>() + " — error: " + r.error->message);
      while (cells.size() < headers_.size()) cells.push_back("");
    } else {
      const json& lat = at(j, "/decode/token_latency_ms");
      // A test measured while the machine did something else is marked where it is read.
      const auto flags = analysis::contamination(r, provenance_);
      if (!flags.empty()) contaminated_.push_back(j["test"].get<std::string>() + ": " + fmt::format("{}", fmt::join(flags, "; ")));
      if (r.verify)
        verify_.push_back(j["test"].get<std::string>() + ": " + analysis::continuation_line(*r.verify));
      if (r.speculative && !r.speculative->pairs.empty())
        for (auto& line : speculative_lines(j["test"].get<std::string>(), *r.speculative))
          speculative_.push_back(std::move(line));
      cells.push_back(j["test"].get<std::string>());
      if (remote_prefill_) cells.push_back(test_prefill_path(r));
      cells.push_back(median_pm(at(j, "/prefill/tokens_per_s"), 2));
      cells.push_back(median_pm(at(j, "/decode/tokens_per_s"), 2));
      cells.push_back(number(at(j, "/ttft_ms/median"), 1));
      cells.push_back(lat.is_object() ? number(lat["p50"], 2) + " / " + number(lat["p99"], 2) : "");
      cells.push_back(number(at(j, "/load/cold_ms"), 0));
      cells.push_back(mib(j["peak_rss_bytes"]));
      const bool contended = ceiling_contended(at(j, "/roofline"));
      cells.push_back(
          efficiency(at(j, "/roofline/prefill_efficiency"), r.config.n_prompt > 0,
                     flag(j["roofline"], "prefill_ceiling_suspect"), contended) +
          " / " +
          efficiency(at(j, "/roofline/decode_efficiency"), r.config.n_gen > 0, flag(j["roofline"], "decode_ceiling_suspect"),
                     contended));
      if (at(j, "/roofline/remeasure_command").is_string())
        remeasure_.insert(at(j, "/roofline/remeasure_command").get<std::string>());
      cells.push_back(decode_bound(j["roofline"], r.config.n_gen > 0));
      // The decode phase where there is one, else prefill: what a rate in this row ran under.
      const json t = phase_telemetry(r, r.config.n_gen > 0 ? "decode" : "prefill");
      const json p = phase_telemetry(r, "prefill");
      const json& hottest = t.contains("max_temp_c") ? t["max_temp_c"] : p.value("max_temp_c", json());
      cells.push_back(r.config.n_gen > 0 ? share_text(t.value("freq_share", json())) : "");
      cells.push_back(hottest.is_number() ? number(hottest, 1) : "n/a");
      const double throttled = t.value("throttled_ms", 0.0) + (r.config.n_gen > 0 ? p.value("throttled_ms", 0.0) : 0.0);
      cells.push_back(t.contains("throttled_ms") ? fmt::format("{:.0f}", throttled) : "n/a");
      cells.push_back(share_text(t.value("other_cpu_share", json())) + (flags.empty() ? "" : " contaminated"));
    }
    row(cells);
    out_.flush();
  }

  void end(const result::BenchReport& report) override {
    serving_table(report);
    for (const auto& line : contaminated_)
      out_ << "\ncontaminated: " << one_line(line, 600)
           << " (measured while the machine was doing something else: compare and explain discount it; run it again on a "
              "quiet machine)\n";
    if (!verify_.empty()) out_ << "\n";
    for (const auto& line : verify_) out_ << "verify: " << one_line(line, 300) << "\n";
    if (!speculative_.empty()) out_ << "\n";
    for (const auto& line : speculative_) out_ << "speculative: " << one_line(line, 400) << "\n";
    for (const auto& command : remeasure_)
      out_ << "\nceiling suspect: a rate beat its measured ceiling by more than the noise margin, so the ceiling was "
              "probed while this machine was slower; measure it again: "
           << command << "\n";
    out_ << fmt::format("\nedgeprobe {} · {} {} ({}) · ggml cpu variant {} · {} · device {}\n",
                        provenance_.value("edgeprobe_version", ""), scalar(at(provenance_, "/engine/name")),
                        scalar(at(provenance_, "/engine/version")), scalar(at(provenance_, "/engine/commit")),
                        scalar(at(provenance_, "/engine/cpu_variant")), scalar(at(provenance_, "/device/cpu_model")),
                        scalar(at(provenance_, "/device/id")));
    out_ << "Medians ± sample sd over repetitions; decode t/s excludes the first generated token; efficiency is "
            "the share of this device's measured ceiling: for prefill, ggml's matmul rate at the model's own shapes; "
            "for decode, the lower of memory bandwidth and ggml's matrix-vector kernels streaming the model's "
            "weights, named in 'tg bound' with the share of pure bandwidth reached. Telemetry (decode, or "
            "prefill for a prefill test): 'tg freq share' is the slowest cluster's mean clock over its maximum, "
            "'max °C' the hottest zone, 'throttled ms' the cgroup's throttled time summed over repetitions, 'other "
            "CPU' other processes' share of the CPUs; n/a: not measured on this device; contended: measured only while "
            "other processes held the CPUs, so no ceiling.\n";
    if (at(provenance_, "/engine/kind") == "endpoint") {
      // Whose figures these are: the server ran the model, this process only timed it.
      const json& ss = at(provenance_, "/engine/details/server_side");
      const json& threads = at(ss, "/threads");
      out_ << fmt::format(
          "Endpoint: the server ran the model ({}); threads {}; load ms and peak RSS are the server's, which it "
          "does not report, so they are empty (this client's own would say nothing of the server).\n",
          at(ss, "/model_path").is_string() ? "its model " + one_line(scalar(at(ss, "/model_path")), 200)
                                             : "its model file unknown",
          threads.is_number_integer() ? fmt::format("{} ({})", scalar(threads), scalar(at(ss, "/threads_source")))
                                      : "n/a (the server did not say; --server-pid reads a local llama-server's)");
    }
    out_.flush();
  }

 private:
  std::vector<std::string> contaminated_;  // "tg32: decode spread ..." for the footer
  std::vector<std::string> verify_;        // "tg32: 32/32 greedy tokens as the reference (run 3)"
  std::vector<std::string> speculative_;   // bench --draft: three lines a test
  static std::string config_key(const std::string& name) { return name == "mmap" ? "use_mmap" : name; }

  // The load levels (--concurrency, --request-rate) of every test that ran them, one row a
  // level, with vLLM's figures; goodput only where an SLO was given.
  void serving_table(const result::BenchReport& report) {
    bool any = false;
    for (const auto& r : report.results) {
      if (!r.serving) continue;
      for (const result::ServingLevel& level : *r.serving) {
        if (!any) {
          out_ << "\nServing (load levels after the repetitions):\n\n";
          row({"test", "level", "completed / failed", "req/s", "output t/s", "goodput req/s", "ttft p50 / p99 ms",
               "tpot p50 ms", "itl p99 ms", "e2el p50 ms"});
          row({"----", "-----", "------------------", "-----", "----------", "-------------", "-----------------",
               "-----------", "----------", "-----------"});
          any = true;
        }
        const std::string name = r.config.name();
        // An open loop has no concurrency of its own: its level is the arrival rate.
        const std::string what = level.concurrency ? fmt::format("concurrency {}", *level.concurrency)
                                                   : fmt::format("{:.6g} req/s", level.request_rate.value_or(0));
        row({name, what, fmt::format("{} / {}", level.completed, level.failed), number(level.request_throughput, 2),
             number(level.output_throughput, 1), level.goodput ? number(level.goodput, 2) : "no SLO",
             number(level.ttft.median, 1) + " / " + number(level.ttft.p99, 1), number(level.tpot.median, 2),
             number(level.itl.p99, 2), number(level.e2el.median, 1)});
      }
    }
  }
  void row(const std::vector<std::string>& cells) {
    out_ << "|";
    for (const auto& c : cells) out_ << " " << c << " |";
    out_ << "\n";
  }
  std::ostream& out_;
  json provenance_;
  std::vector<std::string> model_labels_;
  std::vector<std::string> varied_;
  std::vector<std::string> headers_;
  std::set<std::string> remeasure_;
  bool remote_prefill_ = false;
};

// One row per test: identity, configuration, then aggregates (all from the JSON form).
class CsvReporter : public Reporter {
 public:
  explicit CsvReporter(std::ostream& out) : out_(out) {}
  struct Column {
    const char* header;
    const char* pointer;  // into {"result": ..., "model": ..., "provenance": ...}
  };
  static const std::vector<Column>& columns() {
    static const std::vector<Column> kColumns = {
        {"schema_version", "/schema_version"},
        {"model_path", "/result/model_path"},
        {"model_sha256", "/model/sha256"},
        {"model_quant", "/model/quant"},
        {"model_size_bytes", "/model/size_bytes"},
        {"model_n_params", "/model/n_params"},
        {"engine", "/provenance/engine/name"},
        {"engine_version", "/provenance/engine/version"},
        {"engine_commit", "/provenance/engine/commit"},
        {"ggml_cpu_variant", "/provenance/engine/cpu_variant"},
        {"device_id", "/provenance/device/id"},
        {"device_cpu", "/provenance/device/cpu_model"},
        {"test", "/result/test"},
        {"n_prompt", "/result/config/n_prompt"},
        {"n_gen", "/result/config/n_gen"},
        {"n_depth", "/result/config/n_depth"},
        {"n_threads", "/result/config/n_threads"},
        {"cpu_mask", "/result/config/cpu_mask"},
        {"cpu_strict", "/result/config/cpu_strict"},
        {"poll", "/result/config/poll"},
        {"n_batch", "/result/config/n_batch"},
        {"n_ubatch", "/result/config/n_ubatch"},
        {"flash_attn", "/result/config/flash_attn"},
        {"type_k", "/result/config/type_k"},
        {"type_v", "/result/config/type_v"},
        {"use_mmap", "/result/config/use_mmap"},
        {"status", "/result/status"},
        {"error", "/result/error/message"},
        {"prefill", "/prefill"},  // --prefill-remote: remote, local (fallback), or both counted
        {"repetitions", "/result/ttft_ms/n"},
        {"load_cold_ms", "/result/load/cold_ms"},
        {"load_warm_median_ms", "/result/load/warm_ms/median"},
        {"ttft_median_ms", "/result/ttft_ms/median"},
        {"prefill_tokens_per_s_median", "/result/prefill/tokens_per_s/median"},
        {"prefill_tokens_per_s_mean", "/result/prefill/tokens_per_s/mean"},
        {"prefill_tokens_per_s_stddev", "/result/prefill/tokens_per_s/stddev"},
        {"decode_tokens_per_s_median", "/result/decode/tokens_per_s/median"},
        {"decode_tokens_per_s_mean", "/result/decode/tokens_per_s/mean"},
        {"decode_tokens_per_s_stddev", "/result/decode/tokens_per_s/stddev"},
        {"decode_tokens_per_s_iqr", "/result/decode/tokens_per_s/iqr"},
        {"token_latency_p50_ms", "/result/decode/token_latency_ms/p50"},
        {"token_latency_p90_ms", "/result/decode/token_latency_ms/p90"},
        {"token_latency_p99_ms", "/result/decode/token_latency_ms/p99"},
        {"token_latency_max_ms", "/result/decode/token_latency_ms/max"},
        {"peak_rss_bytes", "/result/peak_rss_bytes"},
        {"decode_efficiency", "/result/roofline/decode_efficiency"},
        {"prefill_efficiency", "/result/roofline/prefill_efficiency"},
        {"decode_bound", "/result/roofline/decode_bound"},
        {"decode_bandwidth_efficiency", "/result/roofline/decode_bandwidth_efficiency"},
        {"prefill_efficiency_note", "/notes/prefill_efficiency"},
        {"decode_efficiency_note", "/notes/decode_efficiency"},
        {"decode_cache_resident", "/result/roofline/decode_cache_resident"},
        {"prefill_freq_share", "/telemetry/prefill/freq_share"},
        {"prefill_max_temp_c", "/telemetry/prefill/max_temp_c"},
        {"prefill_throttled_ms", "/telemetry/prefill/throttled_ms"},
        {"prefill_other_cpu_share", "/telemetry/prefill/other_cpu_share"},
        {"prefill_energy_j", "/telemetry/prefill/energy_j"},
        {"prefill_mean_power_w", "/telemetry/prefill/mean_power_w"},
        {"decode_freq_share", "/telemetry/decode/freq_share"},
        {"decode_max_temp_c", "/telemetry/decode/max_temp_c"},
        {"decode_throttled_ms", "/telemetry/decode/throttled_ms"},
        {"decode_other_cpu_share", "/telemetry/decode/other_cpu_share"},
        {"decode_energy_j", "/telemetry/decode/energy_j"},
        {"decode_mean_power_w", "/telemetry/decode/mean_power_w"},
    };
    return kColumns;
  }

  void begin(const result::Provenance& provenance, const std::vector<workload::TestCase>&) override {
    provenance_ = result::to_json(provenance);
    std::string header;
    for (const auto& c : columns()) header += (header.empty() ? "" : ",") + std::string(c.header);
    out_ << header << "\n";
  }
  void add(const result::TestResult& r) override {
    json res = result::to_json(r);
    // Behind an endpoint the threads column is the server's (empty when it did not say).
    if (at(provenance_, "/engine/kind") == "endpoint")
      res["config"]["n_threads"] = at(provenance_, "/engine/details/server_side/threads");
    const json doc = {{"schema_version", result::kSchemaVersion},
                      {"result", res},
                      {"model", provenance_["models"][static_cast<size_t>(r.model_index)]},
                      {"provenance", provenance_},
                      {"telemetry", {{"prefill", phase_telemetry(r, "prefill")}, {"decode", phase_telemetry(r, "decode")}}},
                      {"notes", efficiency_notes(res["roofline"])},
                      {"prefill", test_prefill_path(r)}};
    std::string line;
    bool first = true;
    for (const auto& c : columns()) {
      line += (first ? "" : ",") + csv_field(scalar(at(doc, c.pointer)));
      first = false;
    }
    out_ << line << "\n";
    out_.flush();
  }
  void end(const result::BenchReport&) override {}

 private:
  std::ostream& out_;
  json provenance_;
};

class JsonReporter : public Reporter {
 public:
  explicit JsonReporter(std::ostream& out) : out_(out) {}
  void begin(const result::Provenance&, const std::vector<workload::TestCase>&) override {}
  void add(const result::TestResult&) override {}
  void end(const result::BenchReport& report) override {
    out_ << result::to_json(report).dump(2) << "\n";
    out_.flush();
  }

 private:
  std::ostream& out_;
};

// One self-contained object per line, written as each test completes.
class JsonlReporter : public Reporter {
 public:
  explicit JsonlReporter(std::ostream& out) : out_(out) {}
  void begin(const result::Provenance& provenance, const std::vector<workload::TestCase>&) override {
    provenance_ = result::to_json(provenance);
  }
  void add(const result::TestResult& r) override {
    json line = result::to_json(r);
    line["schema_version"] = result::kSchemaVersion;
    line["provenance"] = provenance_;
    out_ << line.dump() << "\n";
    out_.flush();
  }
  void end(const result::BenchReport&) override {}

 private:
  std::ostream& out_;
  json provenance_;
};

}  // namespace

std::unique_ptr<Reporter> make_reporter(const std::string& format, std::ostream& out) {
  if (format == "md") return std::make_unique<MarkdownReporter>(out);
  if (format == "csv") return std::make_unique<CsvReporter>(out);
  if (format == "json") return std::make_unique<JsonReporter>(out);
  if (format == "jsonl") return std::make_unique<JsonlReporter>(out);
  check_format(OutputKind::kResults, format);
  throw Error(ErrorKind::kBug, "format '" + format + "' is declared for results but has no reporter");
}

}  // namespace edgeprobe::report
