#include "probe/ceilings.h"

#include <fmt/format.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/clock.h"
#include "core/error.h"
#include "core/text.h"
#include "edgeprobe_version.h"
#include "engine/backend.h"
#include "platform/cpu_features.h"
#include "platform/topology.h"
#include "probe/contention.h"

namespace edgeprobe::probe {
namespace {

// FNV-1a: stable across runs and compilers, unlike std::hash, so cache names survive rebuilds.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.substr(0, 48);
}

std::string mem_total_kb(const FsRoot& fs) {
  auto text = fs.read_text("/proc/meminfo");
  if (!text) return "?";
  std::istringstream in(*text);
  std::string key, value;
  while (in >> key >> value)
    if (key == "MemTotal:") return value;
  return "?";
}

bool same_file(const StorageResult& s, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return s.path == path && s.file_bytes == static_cast<uint64_t>(st.st_size) &&
         s.file_mtime_s == static_cast<int64_t>(st.st_mtime);
}

void write_cache(const DeviceCeilings& c, const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    if (!out) return;  // a cache that cannot be written is not an error: the figures stand
    out << to_json(c).dump(2) << "\n";
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: a concurrent reader never sees half a file
  if (ec) std::filesystem::remove(tmp, ec);
}

bool same_kernel_point(const KernelPoint& x, const KernelPoint& y) {
  return x.phase == y.phase && x.model == y.model && x.type == y.type && x.rows == y.rows && x.cols == y.cols &&
         x.tokens == y.tokens && x.threads == y.threads;
}

// What the file holds that `mine` lacks: points, step costs, GPU entries and the storage
// figure another process measured since `mine` was read. Mine's own figures stand as they
// are (a refresh with --replace keeps what it measured).
void add_missing(DeviceCeilings& mine, const DeviceCeilings& disk) {
  for (const auto& k : disk.kernels)
    if (std::none_of(mine.kernels.begin(), mine.kernels.end(), [&](const KernelPoint& m) { return same_kernel_point(m, k); }))
      mine.kernels.push_back(k);
  for (const auto& s : disk.step_costs)
    if (!mine.step_cost(s.threads)) mine.step_costs.push_back(s);
  for (const auto& g : disk.gpus) {
    if (DeviceCeilings* have = mine.gpu(g.device)) add_missing(*have, g);
    else mine.gpus.push_back(g);
  }
  if (!mine.storage && disk.storage) mine.storage = disk.storage;
}

// Two processes (a bench and a probe, two lab jobs, a doctor's children) add points to one
// cache file: each writes under an exclusive lock what the file holds now merged with its
// own, so neither loses the other's. The lock is a file of its own, since the cache file is
// replaced by rename.
void save_merged(const DeviceCeilings& c, const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const int lock = ::open((path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);  // a lock that cannot be taken leaves the write as it was before
  DeviceCeilings merged = c;
  if (std::ifstream in(path); in) {
    try {
      const auto j = nlohmann::json::parse(in);
      if (j.value("schema_version", 0) == DeviceCeilings::kSchemaVersion && j.value("build_key", "") == c.build_key &&
          j.value("device_key", "") == c.device_key)
        add_missing(merged, ceilings_from_json(j));
    } catch (const nlohmann::json::exception&) {
      // a damaged file is written over
    }
  }
  write_cache(merged, path);
  if (lock >= 0) ::close(lock);  // releases the lock
}

}  // namespace

void save_cache(const DeviceCeilings& c) {
  if (!c.cache_path.empty()) save_merged(c, c.cache_path);
}

const KernelPoint* DeviceCeilings::decode_kernel(const std::string& model_signature, int threads) const {
  const KernelPoint* best = nullptr;
  for (const auto& k : kernels)
    if (k.phase == "decode" && k.model == model_signature && k.threads == threads && k.usable() &&
        (!best || k.decode_ceiling_gb_per_s() > best->decode_ceiling_gb_per_s()))
      best = &k;
  return best;
}

const DeviceCeilings* DeviceCeilings::gpu(const std::string& name) const {
  for (const auto& g : gpus)
    if (g.device == name) return &g;
  return nullptr;
}

DeviceCeilings* DeviceCeilings::gpu(const std::string& name) {
  for (auto& g : gpus)
    if (g.device == name) return &g;
  return nullptr;
}

std::optional<DeviceCeilings> gpu_view(const DeviceCeilings& host, const std::string& device) {
  const DeviceCeilings* g = host.gpu(device);
  if (!g) return std::nullopt;
  DeviceCeilings view = *g;
  view.storage = host.storage;
  view.device_key = host.device_key;
  view.build_key = host.build_key;
  return view;
}

const StepCosts* DeviceCeilings::step_cost(int threads) const {
  for (const auto& c : step_costs)
    if (c.threads == threads) return &c;
  return nullptr;
}

double DeviceCeilings::prefill_kernel_gflop_per_s(const MatrixShape& shape, int64_t tokens, int threads) const {
  double best = 0;
  for (const auto& k : kernels)
    if (k.phase == "prefill" && k.type == shape.type && k.rows == shape.rows && k.cols == shape.cols &&
        k.tokens == tokens && k.threads == threads && k.usable())
      best = std::max(best, k.best_gflop_per_s);
  return best;
}

uint64_t memory_total_bytes(const std::string& sysfs_root) {
  const std::string kb = mem_total_kb(FsRoot(sysfs_root));
  if (kb.empty() || kb == "?") return 0;
  try {
    return std::stoull(kb) * 1024;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string default_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  std::string base;
  if (xdg && *xdg) {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    base = std::string(home && *home ? home : "/tmp") + "/.cache";
  }
  return base + "/edgeprobe/probe";
}

namespace {
// The CPUs sched_getaffinity allows this process (empty when unreadable).
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}
}  // namespace

std::string device_key(const std::string& sysfs_root) {
  const FsRoot fs(sysfs_root);
  const std::string model = platform::cpu_model_name(fs);
  const auto topo = platform::detect_topology(fs);
  const auto features = platform::detect_cpu_features(fs);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string identity = fmt::format("{}|{}|{}|{}|{}|{}", model, topo.n_logical, topo.n_cores, topo.llc_total_bytes(),
                                     mem_total_kb(fs), host);
  for (const auto& f : features.present()) identity += "|" + f;
  // A process held to fewer CPUs (a cpuset, taskset, a container) is a smaller device:
  // its ceilings are not the whole machine's, so they get a cache of their own.
  const auto cpus = allowed_cpus();
  const bool restricted = !cpus.empty() && static_cast<int>(cpus.size()) < topo.n_logical;
  if (restricted)
    for (int cpu : cpus) identity += fmt::format("|cpu{}", cpu);
  const std::string logical = restricted ? fmt::format("{}of{}", cpus.size(), topo.n_logical) : std::to_string(topo.n_logical);
  return fmt::format("{}-{}t-{:08x}", sanitize(model), logical, fnv1a(identity) & 0xffffffffu);
}

std::string build_key(const std::string& variant) {
  return sanitize(fmt::format("ep{}-llama{}-{}", kVersion, kLlamaCppCommit, variant.empty() ? "default" : variant));
}

namespace {

// The figures that do not depend on the ggml CPU variant (memory bandwidth, storage), from
// another variant's cache of this device and build: a first run with --cpu-variant need
// not read the memory again for a minute. nullopt when there is none.
std::optional<DeviceCeilings> other_variant_cache(const ProbeOptions& options, const std::string& path) {
  const std::string dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  const std::string prefix = device_key(options.sysfs_root) + "__" + build_key("");
  const std::string stem = prefix.substr(0, prefix.size() - std::string("default").size());
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string(), full = entry.path().string();
    if (full == path || !name.starts_with(stem) || !name.ends_with(".json")) continue;
    try {
      std::ifstream in(full);
      const auto j = nlohmann::json::parse(in);
      if (j.value("schema_version", 0) != DeviceCeilings::kSchemaVersion) continue;
      if (options.max_threads > 0 && j.value("threads", 0) != options.max_threads) continue;
      DeviceCeilings c = ceilings_from_json(j);
      if (c.bandwidth.points.empty()) continue;
      c.cache_path = full;
      return c;
    } catch (const nlohmann::json::exception&) {
      continue;
    }
  }
  return std::nullopt;
}

DeviceCeilings measure_reusing(const ProbeOptions& options, const DeviceCeilings* sibling);

}  // namespace

DeviceCeilings measure_ceilings(const ProbeOptions& options) { return measure_reusing(options, nullptr); }

namespace {

DeviceCeilings measure_reusing(const ProbeOptions& options, const DeviceCeilings* sibling) {
  const auto t0 = std::chrono::steady_clock::now();
  const FsRoot fs(options.sysfs_root);
  DeviceCeilings c;
  c.cpu_model = platform::cpu_model_name(fs);
  c.measured_at_utc = utc_now_rfc3339();
  const auto topo = platform::detect_topology(fs);
  c.llc_total_bytes = topo.llc_total_bytes();
  c.memory_bytes = memory_total_bytes(options.sysfs_root);
  // One thread per core this process may run on: more would measure oversubscription.
  const int allowed = static_cast<int>(allowed_cpus().size());
  c.threads = options.max_threads > 0 ? options.max_threads
                                      : std::max(1, allowed > 0 ? std::min(topo.n_cores, allowed) : topo.n_cores);

  const size_t total = 1 + options.measure_compute + !options.model_path.empty();
  size_t done = 0;
  auto progress = [&](const std::string& step) {
    if (options.progress) options.progress(step, done, total);
    ++done;
  };
  BandwidthOptions bw = options.bandwidth;
  bw.max_threads = c.threads;
  if (options.buffer_bytes) bw.buffer_bytes = options.buffer_bytes;
  if (sibling && sibling->threads == c.threads) {
    // Memory bandwidth is read by edgeprobe's own kernels, whatever ggml variant loads.
    c.bandwidth = sibling->bandwidth;
    c.kept_notes.push_back("memory bandwidth from this device's cache for another ggml variant (" + sibling->cache_path +
                           "): it does not depend on the variant");
    ++done;
  } else {
    progress(fmt::format("memory bandwidth, 1 to {} threads", c.threads));
    c.bandwidth = measure_bandwidth(topo, bw);
  }

  std::string variant = options.variant;
  if (options.measure_compute) {
    progress(fmt::format("matrix compute, 1 to {} threads", c.threads));
    ComputeOptions co = options.compute;
    co.threads = c.threads;
    co.variant = options.variant;
    co.backend_dir = options.backend_dir;
    try {
      c.compute = measure_compute(co);
      c.compute_status = "measured";
      variant = c.compute.variant;
    } catch (const Error& e) {
      c.compute_status = std::string("unavailable: ") + e.what();
    }
  } else {
    c.compute_status = "unavailable: not requested";
  }
  if (!options.model_path.empty()) {
    if (sibling && sibling->storage && same_file(*sibling->storage, options.model_path)) {
      c.storage = sibling->storage;
      ++done;
    } else {
      progress("storage: reading " + options.model_path + " cold and warm");
      c.storage = measure_storage(options.model_path, options.storage);
    }
  }
  if (options.progress) options.progress("done", done, total);
  c.device_key = device_key(options.sysfs_root);
  c.build_key = build_key(variant);
  c.probe_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

}  // namespace

namespace {

std::string cache_file(const ProbeOptions& options, const std::string& variant) {
  const std::string dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  return fmt::format("{}/{}__{}.json", dir, device_key(options.sysfs_root), build_key(variant));
}

}  // namespace

std::optional<DeviceCeilings> load_cached(const ProbeOptions& options) {
  // The build key names the variant that will run, so load it first (it is needed anyway).
  std::string variant = options.variant;
  if (options.measure_compute) variant = engine::load_cpu_backend(options.variant, options.backend_dir).variant;
  const std::string path = cache_file(options, variant);
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(in);
    if (j.value("schema_version", 0) != DeviceCeilings::kSchemaVersion) return std::nullopt;
    if (options.max_threads > 0 && j.value("threads", 0) != options.max_threads) return std::nullopt;
    DeviceCeilings c = ceilings_from_json(j);
    c.from_cache = true;
    c.cache_path = path;
    return c;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a damaged cache file is measured over
  }
}

namespace {

// The figure a point stands for as a ceiling, and whether it may stand for one at all.
template <class Point>
bool lower_than(const Point& fresh, const Point& stored, double (*rate)(const Point&)) {
  if (!stored.usable()) return false;
  return !fresh.usable() || rate(fresh) < rate(stored);
}

}  // namespace

std::optional<std::string> merge_kernel_point(KernelPoint& stored, KernelPoint fresh, bool replace) {
  const bool decode = stored.phase == "decode";
  auto ceiling_rate = [decode](const KernelPoint& k) {
    return decode ? k.decode_ceiling_gb_per_s() : k.median_gflop_per_s;
  };
  if (replace && fresh.error.empty()) {
    stored = std::move(fresh);
    return std::nullopt;
  }
  // A contended point is no ceiling; a clean one with a higher median is the better point.
  const bool fresh_better = fresh.usable() && (!stored.usable() || ceiling_rate(fresh) > ceiling_rate(stored));
  const bool both_usable = fresh.usable() && stored.usable();
  const double best_gb = std::max(stored.best_gb_per_s, fresh.best_gb_per_s);
  const double best_gflop = std::max(stored.best_gflop_per_s, fresh.best_gflop_per_s);
  std::optional<std::string> note;
  if (fresh_better || (!stored.usable() && fresh.error.empty() && fresh.cpu_share > stored.cpu_share)) {
    stored = std::move(fresh);
  } else if (stored.usable()) {
    const std::string kept = fmt::format("kept the stored {} {} kernel point ({:.1f} {})", stored.phase, stored.type,
                                         ceiling_rate(stored), decode ? "GB/s" : "GFLOP/s");
    note = fresh.error.empty() ? fmt::format("{} over this measurement's {:.1f}", kept, ceiling_rate(fresh))
                               : fmt::format("{}: measuring it again failed ({})", kept, fresh.error);
  }
  if (both_usable) {
    stored.best_gb_per_s = best_gb;
    stored.best_gflop_per_s = best_gflop;
  }
  return note;
}

DeviceCeilings keep_higher(const DeviceCeilings& stored, DeviceCeilings fresh) {
  // Bandwidth: per kernel, scope and thread count.
  for (const auto& old : stored.bandwidth.points) {
    auto it = std::find_if(fresh.bandwidth.points.begin(), fresh.bandwidth.points.end(), [&](const BandwidthPoint& p) {
      return p.kernel == old.kernel && p.scope == old.scope && p.threads == old.threads;
    });
    const bool old_usable = !old.contended() && old.median_gb_per_s > 0;
    if (it == fresh.bandwidth.points.end()) {
      if (old_usable) fresh.bandwidth.points.push_back(old);
    } else if (old_usable && (it->contended() || it->median_gb_per_s < old.median_gb_per_s)) {
      fresh.kept_notes.push_back(fmt::format("kept the stored {} {} x{} bandwidth ({:.1f} GB/s median, measured {}) "
                                             "over this refresh's {:.1f} GB/s{}",
                                             old.kernel, old.scope, old.threads, old.median_gb_per_s,
                                             stored.measured_at_utc, it->median_gb_per_s,
                                             it->contended() ? " (contended)" : ""));
      *it = old;
    }
  }
  summarize_points(fresh.bandwidth);
  // Compute: per type, shape and thread count.
  for (const auto& old : stored.compute.points) {
    auto it = std::find_if(fresh.compute.points.begin(), fresh.compute.points.end(), [&](const ComputePoint& p) {
      return p.type == old.type && p.rows == old.rows && p.cols == old.cols && p.tokens == old.tokens &&
             p.threads == old.threads;
    });
    if (it == fresh.compute.points.end()) {
      if (old.usable()) fresh.compute.points.push_back(old);
    } else if (lower_than<ComputePoint>(*it, old, [](const ComputePoint& p) { return p.median_gflop_per_s; })) {
      fresh.kept_notes.push_back(fmt::format("kept the stored {} matmul rate ({:.1f} GFLOP/s median, measured {}) "
                                             "over this refresh's {:.1f}",
                                             old.type, old.median_gflop_per_s, stored.measured_at_utc,
                                             it->median_gflop_per_s));
      *it = old;
    }
  }
  if (fresh.compute_status != "measured" && stored.compute_status == "measured") {
    fresh.compute = stored.compute;
    fresh.compute_status = stored.compute_status;
  }
  // The model's kernel points are measured again by ensure_model_kernels, which keeps the
  // better of the stored and the fresh point itself.
  fresh.kernels = stored.kernels;
  // Step costs are not ceilings: they stay as measured until predict --remeasure.
  fresh.step_costs = stored.step_costs;
  // The GPUs' figures are refreshed by ensure_gpu_ceilings, which keeps the higher ones.
  if (fresh.gpus.empty()) fresh.gpus = stored.gpus;
  if (!fresh.storage && stored.storage) fresh.storage = stored.storage;
  return fresh;
}

namespace {

// Figures probed while other processes held the CPUs are kept out of the ceilings; a cache
// that holds any is measured again on a later use rather than left without a ceiling until
// someone refreshes it by hand. Not within minutes of its last measurement: a machine busy
// then is likely still busy, and runs started back to back would each pay for a probe.
constexpr auto kContendedRetryAfter = std::chrono::minutes(10);

bool remeasure_contended(const DeviceCeilings& c) {
  bool contended = false;
  for (const auto& p : c.bandwidth.points) contended = contended || p.contended();
  for (const auto& p : c.compute.points) contended = contended || (p.error.empty() && !p.usable());
  if (!contended) return false;
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(c.cache_path, ec);
  return !ec && std::filesystem::file_time_type::clock::now() - written >= kContendedRetryAfter;
}

}  // namespace

DeviceCeilings load_or_measure(const ProbeOptions& options, bool refresh) {
  std::string variant = options.variant;
  if (options.measure_compute) variant = engine::load_cpu_backend(options.variant, options.backend_dir).variant;
  const std::string path = cache_file(options, variant);
  if (!refresh) {
    auto cached = load_cached(options);
    if (cached && remeasure_contended(*cached)) {
      // As a refresh: keep_higher keeps every usable stored figure, so a machine busy again
      // now loses nothing the cache had.
      if (options.progress) options.progress("measuring again the ceilings probed under contention", 0, 1);
      refresh = true;
    } else if (auto& c = cached) {
      if (!options.model_path.empty() && !(c->storage && same_file(*c->storage, options.model_path))) {
        if (options.progress) options.progress("storage: reading " + options.model_path + " cold and warm", 0, 1);
        c->storage = measure_storage(options.model_path, options.storage);
        if (options.progress) options.progress("done", 1, 1);
        save_merged(*c, path);
      }
      return *c;
    }
  }
  // A first probe of this build with another variant reuses what no variant changes.
  const auto sibling = refresh ? std::nullopt : other_variant_cache(options, path);
  DeviceCeilings c = measure_reusing(options, sibling ? &*sibling : nullptr);
  // A refresh never lowers a ceiling of this device and build unless asked to: the machine
  // may be busier now than when the stored figure was measured.
  if (refresh && !options.replace)
    if (auto stored = load_cached(options)) c = keep_higher(*stored, std::move(c));
  c.cache_path = path;
  save_merged(c, path);
  return c;
}

}  // namespace edgeprobe::probe
