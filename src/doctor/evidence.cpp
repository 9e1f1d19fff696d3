#include "doctor/evidence.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "workload/sweep.h"
#include "result/result.h"

namespace edgeprobe::doctor {
namespace {

constexpr double kTicksPerSecond = 100;  // USER_HZ, see proc(5)

std::optional<std::pair<std::string, int64_t>> read_process_ticks(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // "pid (comm) state ...": comm may hold spaces and parentheses, so split at the last ')'.
  const auto open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return std::make_pair(line.substr(open + 1, close - open - 1), utime + stime);
}

}  // namespace

ProcessWatch::ProcessWatch() : before_(take()) {}

ProcessWatch::Snapshot ProcessWatch::take() {
  Snapshot s;
  std::ifstream stat("/proc/stat");
  for (std::string line; std::getline(stat, line);) {
    if (!line.starts_with("cpu") || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    fields >> cpu;
    std::vector<int64_t> v(8, 0);
    for (auto& x : v) fields >> x;
    s.cpu[cpu] = v;
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::stoi(name);
    if (auto t = read_process_ticks(pid)) s.processes[pid] = *t;
  }
  std::ifstream pressure("/proc/pressure/cpu");
  for (std::string word; pressure >> word;)
    if (word.starts_with("total=")) {
      s.pressure_us = std::stoll(word.substr(6));
      break;  // the first line is "some"
    }
  const auto cgroup = telemetry::discover_cgroup(FsRoot("/"), 0);
  s.throttled_us = cgroup.throttled_us;
  s.nr_throttled = cgroup.nr_throttled;
  return s;
}

RunWindow ProcessWatch::finish(double wall_s, double child_cpu_s, const std::vector<int>& cpus) const {
  const Snapshot after = take();
  RunWindow w;
  w.wall_s = wall_s;
  w.child_cpu_s = child_cpu_s;
  std::vector<double> d(8, 0.0);
  bool any = false;
  for (const auto& [cpu, now] : after.cpu) {
    if (!cpus.empty() && std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
    const auto b = before_.cpu.find(cpu);
    if (b == before_.cpu.end()) continue;
    for (size_t i = 0; i < 8; ++i) d[i] += static_cast<double>(now[i] - b->second[i]) / kTicksPerSecond;
    any = true;
  }
  if (any) {
    const double total = d[0] + d[1] + d[2] + d[3] + d[4] + d[5] + d[6] + d[7];
    const double busy = d[0] + d[1] + d[2] + d[5] + d[6];
    // Doctor's own time is tiny (it waits on a pipe) but it is not "another process".
    double self_s = 0;
    if (auto a = after.processes.find(::getpid()); a != after.processes.end()) {
      auto b = before_.processes.find(::getpid());
      self_s = static_cast<double>(a->second.second - (b == before_.processes.end() ? 0 : b->second.second)) / kTicksPerSecond;
    }
    if (total > 0) {
      w.other_cpu_share = std::clamp((busy - child_cpu_s - self_s) / total, 0.0, 1.0);
      w.steal_share = d[7] / total;
    }
  }
  for (const auto& [pid, now] : after.processes) {
    if (pid == ::getpid()) continue;
    auto b = before_.processes.find(pid);
    const int64_t ticks = now.second - (b == before_.processes.end() ? 0 : b->second.second);
    if (ticks <= 0 || wall_s <= 0) continue;
    w.top_others.push_back({pid, now.first, static_cast<double>(ticks) / kTicksPerSecond / wall_s});
  }
  std::sort(w.top_others.begin(), w.top_others.end(), [](const auto& a, const auto& b) { return a.cpus > b.cpus; });
  if (w.top_others.size() > 5) w.top_others.resize(5);
  if (before_.throttled_us && after.throttled_us) w.throttled_ms = static_cast<double>(*after.throttled_us - *before_.throttled_us) / 1000.0;
  if (before_.pressure_us && after.pressure_us && wall_s > 0)
    w.cpu_pressure_share = std::clamp(static_cast<double>(*after.pressure_us - *before_.pressure_us) / 1e6 / wall_s, 0.0, 1.0);
  if (before_.nr_throttled && after.nr_throttled) w.nr_throttled = static_cast<double>(*after.nr_throttled - *before_.nr_throttled);
  return w;
}

DeviceFacts collect_device_facts(const FsRoot& fs) {
  DeviceFacts f;
  f.cpus = telemetry::discover_cpus(fs);
  f.cgroup = telemetry::discover_cgroup(fs, 0);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) f.affinity.push_back(cpu);
  }
  f.physical_cores = workload::default_thread_count();
  f.gpus = telemetry::discover_gpus(fs).gpus;
  return f;
}

std::vector<int> usable_cpus(const DeviceFacts& device, const RunConfig& config) {
  std::vector<int> cpus = device.affinity;
  auto keep_only = [&](const std::vector<int>& allowed) {
    if (allowed.empty()) return;
    std::erase_if(cpus, [&](int c) { return std::find(allowed.begin(), allowed.end(), c) == allowed.end(); });
  };
  keep_only(device.cgroup.cpuset);
  if (!config.cpu_mask.empty()) {
    // ggml's mask: hex, bit i = CPU i, lowest bits last ("0x3" = CPUs 0 and 1).
    std::string hex = config.cpu_mask;
    if (hex.starts_with("0x") || hex.starts_with("0X")) hex = hex.substr(2);
    std::vector<int> in_mask;
    for (size_t i = 0; i < hex.size(); ++i) {
      const char c = hex[hex.size() - 1 - i];
      const int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
      for (int bit = 0; bit < 4; ++bit)
        if (v >= 0 && v < 16 && (v >> bit & 1)) in_mask.push_back(static_cast<int>(i) * 4 + bit);
    }
    std::erase_if(cpus, [&](int c) { return std::find(in_mask.begin(), in_mask.end(), c) == in_mask.end(); });
  }
  return cpus;
}

namespace report_view {

const result::TestResult* find_result(const std::optional<result::BenchReport>& report, const std::string& test,
                                      int threads) {
  if (!report) return nullptr;
  for (const auto& r : report->results) {
    if (r.error || r.config.name() != test) continue;
    if (threads > 0 && r.config.n_threads != threads) continue;
    return &r;
  }
  return nullptr;
}

std::optional<double> median(const result::TestResult* result, Phase phase) {
  if (!result) return std::nullopt;
  const bool prefill = phase == Phase::kPrefill;
  if ((prefill ? result->config.n_prompt : result->config.n_gen) <= 0) return std::nullopt;
  const result::TestSummary s = result::summarize(*result);
  const stats::Summary& tps = prefill ? s.prefill_tokens_per_s : s.decode_tokens_per_s;
  if (tps.n == 0) return std::nullopt;
  return tps.median;
}

std::vector<const nlohmann::json*> phase_telemetry(const result::TestResult& result, const char* phase) {
  std::vector<const nlohmann::json*> out;
  for (const auto& rep : result.repetitions)
    if (const auto& p = field(rep.telemetry, phase); p.is_object()) out.push_back(&p);
  return out;
}

}  // namespace report_view

Rates rates(const std::optional<result::BenchReport>& report, int n_prompt, int n_gen, const std::string& key,
            const nlohmann::json& value) {
  auto find = [&](const std::string& test, report_view::Phase phase) -> std::optional<double> {
    if (!report) return std::nullopt;
    for (const auto& r : report->results) {
      if (r.error || r.config.name() != test) continue;
      if (!key.empty() && result::config_field(result::to_json(r.config), key) != value) continue;
      return report_view::median(&r, phase);
    }
    return std::nullopt;
  };
  return {find("pp" + std::to_string(n_prompt), report_view::Phase::kPrefill),
          find("tg" + std::to_string(n_gen), report_view::Phase::kDecode)};
}

std::optional<double> turn_s(const Rates& r, int n_prompt, int n_gen) {
  double s = 0;
  if (n_prompt > 0) {
    if (!r.pp || *r.pp <= 0) return std::nullopt;
    s += n_prompt / *r.pp;
  }
  if (n_gen > 0) {
    if (!r.tg || *r.tg <= 0) return std::nullopt;
    s += n_gen / *r.tg;
  }
  return s > 0 ? std::optional<double>(s) : std::nullopt;
}

double DeclaredMemory::total() const {
  double sum = 0;
  for (const auto& [key, b] : bytes) sum += b;
  return sum;
}

double DeclaredMemory::model_copies() const {
  double sum = 0;
  for (const auto& [key, b] : bytes)
    if (key.ends_with(" model") && key.find("_Mapped") == std::string::npos) sum += b;
  return sum;
}

std::string DeclaredMemory::text() const {
  std::string out;
  for (const auto& [key, b] : bytes)
    out += fmt::format("{}{} {:.1f} MiB", out.empty() ? "" : ", ", key, b / 1048576.0);
  return out;
}

DeclaredMemory declared_memory(const nlohmann::json& llama_log) {
  // "load_tensors:   CPU_REPACK model buffer size =    13.50 MiB",
  // "llama_kv_cache:        CPU KV buffer size =     2.00 MiB"
  static const std::regex line(R"((\S+)\s+(model|KV|compute|output)\s+buffer size\s*=\s*([0-9.]+)\s*MiB)");
  DeclaredMemory d;
  if (!llama_log.is_array()) return d;
  for (const auto& l : llama_log) {
    const std::string s = text(l, "text");
    std::smatch m;
    if (!std::regex_search(s, m, line)) continue;
    const std::string key = m[1].str() + " " + m[2].str();
    const double bytes = std::atof(m[3].str().c_str()) * 1048576.0;
    d.bytes[key] = std::max(d.bytes[key], bytes);
  }
  return d;
}

}  // namespace edgeprobe::doctor
