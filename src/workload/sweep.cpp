#include "workload/sweep.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <set>

#include "core/error.h"
#include "workload/sweep_size.h"

namespace edgeprobe::workload {
namespace {

int parse_int(const std::string& text, const std::string& flag, const std::string& item) {
  int value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw_bad_input("invalid value '{}' for {}: expected an integer or a range like 64-512*2", item, flag);
  return value;
}

}  // namespace

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    items.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return items;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& flag) {
  std::vector<int> values;
  constexpr size_t kMaxValues = 10000;  // a typo like 1-1000000 must not hang the plan
  for (const std::string& item : split_list(text)) {
    const size_t dash = item.find('-', 1);
    if (dash == std::string::npos) {
      values.push_back(parse_int(item, flag, item));
      continue;
    }
    const int first = parse_int(item.substr(0, dash), flag, item);
    std::string rest = item.substr(dash + 1);
    char op = '+';
    int step = 1;
    if (const size_t at = rest.find_first_of("+*"); at != std::string::npos) {
      op = rest[at];
      step = parse_int(rest.substr(at + 1), flag, item);
      rest = rest.substr(0, at);
    }
    const int last = parse_int(rest, flag, item);
    if (last < first) throw_bad_input("invalid range '{}' for {}: the end is below the start", item, flag);
    if (op == '+' && step < 1)
      throw_bad_input("invalid range '{}' for {}: the step must be positive", item, flag);
    if (op == '*' && (step < 2 || first < 1))
      throw_bad_input(
          "invalid range '{}' for {}: a multiplicative range needs a start >= 1 and a factor >= 2", item,
          flag);
    for (long long v = first; v <= last; v = op == '+' ? v + step : v * step) {
      values.push_back(static_cast<int>(v));
      if (values.size() > kMaxValues)
        throw_bad_input("range '{}' for {} expands to more than {} values", item, flag, kMaxValues);
    }
  }
  return values;
}

std::vector<int> parse_int_lists(const std::vector<std::string>& texts, const std::string& flag) {
  std::vector<int> values;
  for (const auto& t : texts) {
    auto v = parse_int_list(t, flag);
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

int parse_flash_attn(const std::string& text) {
  if (text == "on" || text == "1" || text == "true" || text == "enabled") return 1;
  if (text == "off" || text == "0" || text == "false" || text == "disabled") return 0;
  if (text == "auto" || text == "-1") return -1;
  throw_bad_input("invalid value '{}' for -fa: use on, off or auto", text);
}

bool parse_bool(const std::string& text, const std::string& flag) {
  if (text == "1" || text == "true" || text == "on") return true;
  if (text == "0" || text == "false" || text == "off") return false;
  throw_bad_input("invalid value '{}' for {}: use 0 or 1", text, flag);
}

std::string TestCase::name() const {
  std::string n;
  switch (kind) {
    case TestKind::kPrompt:
      n = "pp" + std::to_string(n_prompt);
      break;
    case TestKind::kGenerate:
      n = "tg" + std::to_string(n_gen);
      break;
    case TestKind::kPromptGenerate:
      n = "pp" + std::to_string(n_prompt) + "+tg" + std::to_string(n_gen);
      break;
  }
  if (n_depth > 0) n += " @ d" + std::to_string(n_depth);
  return n;
}

uint64_t saturating_product(std::initializer_list<uint64_t> sizes) {
  uint64_t product = 1;
  for (uint64_t n : sizes) {
    if (n == 0) return 0;
    if (product > std::numeric_limits<uint64_t>::max() / n)
      product = std::numeric_limits<uint64_t>::max();
    else
      product *= n;
  }
  return product;
}

// The GPU settings' own cross product, load settings outermost (a small list: at most a
// few values each).
std::vector<TestCase> gpu_settings(const SweepSpec& spec) {
  std::vector<TestCase> out;
  for (int ngl : spec.n_gpu_layers)
    for (const auto& dev : spec.devices)
      for (const auto& sm : spec.split_mode)
        for (int mg : spec.main_gpu)
          for (int offload : spec.op_offload) {
            TestCase c;
            c.n_gpu_layers = ngl;
            c.devices = dev;
            c.split_mode = sm;
            c.main_gpu = mg;
            c.op_offload = offload != 0;
            out.push_back(c);
          }
  return out;
}

uint64_t test_count(const SweepSpec& spec) {
  const auto positive = [](const std::vector<int>& v) {
    return static_cast<uint64_t>(std::count_if(v.begin(), v.end(), [](int x) { return x > 0; }));
  };
  const auto pairs = static_cast<uint64_t>(std::count_if(
      spec.prompt_gen.begin(), spec.prompt_gen.end(), [](auto pg) { return pg.first > 0 || pg.second > 0; }));
  const uint64_t per_setting = positive(spec.n_prompt) + positive(spec.n_gen) + pairs;
  return saturating_product({spec.models.size(), spec.use_mmap.size(), spec.n_gpu_layers.size(),
                             spec.devices.size(), spec.split_mode.size(), spec.main_gpu.size(),
                             spec.op_offload.size(), spec.n_batch.size(), spec.n_ubatch.size(),
                             spec.type_k.size(), spec.type_v.size(), spec.flash_attn.size(),
                             spec.threads.empty() ? 1 : spec.threads.size(), spec.cpu_masks.size(),
                             spec.cpu_strict.size(), spec.n_depth.size(), spec.poll.size(), per_setting});
}

std::vector<TestCase> expand(const SweepSpec& spec, int default_threads) {
  if (const uint64_t n = test_count(spec); n > kMaxSweepTests)
    throw_bad_input(
        "the sweep's cross product is {} tests, over the {} one run may hold: sweep fewer values at once",
        n == std::numeric_limits<uint64_t>::max() ? std::string("over 18446744073709551615")
                                                  : std::to_string(n),
        kMaxSweepTests);
  std::vector<TestCase> cases;
  const std::vector<int> threads = spec.threads.empty() ? std::vector<int>{default_threads} : spec.threads;
  const std::vector<TestCase> gpus = gpu_settings(spec);
  for (const auto& model : spec.models)
    for (int mmap : spec.use_mmap)
      for (const TestCase& gpu : gpus)
        for (int nb : spec.n_batch)
          for (int ub : spec.n_ubatch)
            for (const auto& tk : spec.type_k)
              for (const auto& tv : spec.type_v)
                for (int fa : spec.flash_attn)
                  for (int t : threads)
                    for (const auto& mask : spec.cpu_masks)
                      for (int strict : spec.cpu_strict)
                        for (int depth : spec.n_depth)
                          for (int poll : spec.poll) {
                            TestCase base = gpu;
                            base.model_path = model;
                            base.use_mmap = mmap != 0;
                            base.n_batch = nb;
                            base.n_ubatch = ub;
                            base.type_k = tk;
                            base.type_v = tv;
                            base.flash_attn = fa;
                            base.n_threads = t;
                            base.cpu_mask = mask;
                            base.cpu_strict = strict != 0;
                            base.n_depth = depth;
                            base.poll = poll;
                            for (int p : spec.n_prompt) {
                              if (p <= 0) continue;  // 0 means "no prompt test", as in llama-bench
                              TestCase c = base;
                              c.kind = TestKind::kPrompt;
                              c.n_prompt = p;
                              cases.push_back(c);
                            }
                            for (int g : spec.n_gen) {
                              if (g <= 0) continue;
                              TestCase c = base;
                              c.kind = TestKind::kGenerate;
                              c.n_gen = g;
                              cases.push_back(c);
                            }
                            for (auto [p, g] : spec.prompt_gen) {
                              if (p <= 0 && g <= 0) continue;
                              TestCase c = base;
                              c.kind = TestKind::kPromptGenerate;
                              c.n_prompt = p;
                              c.n_gen = g;
                              cases.push_back(c);
                            }
                          }
  return cases;
}

std::vector<std::string> varied_parameters(const std::vector<TestCase>& cases) {
  std::vector<std::string> varied;
  auto check = [&](const char* name, auto get) {
    std::set<std::string> seen;
    for (const auto& c : cases) seen.insert(fmt::format("{}", get(c)));
    if (seen.size() > 1) varied.push_back(name);
  };
  check("model", [](const TestCase& c) { return c.model_path; });
  check("mmap", [](const TestCase& c) { return c.use_mmap; });
  check("n_gpu_layers", [](const TestCase& c) { return c.n_gpu_layers; });
  check("devices", [](const TestCase& c) { return c.devices; });
  check("split_mode", [](const TestCase& c) { return c.split_mode; });
  check("main_gpu", [](const TestCase& c) { return c.main_gpu; });
  check("op_offload", [](const TestCase& c) { return c.op_offload; });
  check("n_batch", [](const TestCase& c) { return c.n_batch; });
  check("n_ubatch", [](const TestCase& c) { return c.n_ubatch; });
  check("type_k", [](const TestCase& c) { return c.type_k; });
  check("type_v", [](const TestCase& c) { return c.type_v; });
  check("flash_attn", [](const TestCase& c) { return c.flash_attn; });
  check("cpu_mask", [](const TestCase& c) { return c.cpu_mask; });
  check("cpu_strict", [](const TestCase& c) { return c.cpu_strict; });
  check("poll", [](const TestCase& c) { return c.poll; });
  return varied;
}

int usable_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::string oversubscription_warning(const std::vector<int>& thread_counts, int usable) {
  const auto most = std::max_element(thread_counts.begin(), thread_counts.end());
  if (most == thread_counts.end() || *most <= usable) return "";
  return fmt::format(
      "-t {} is more threads than the {} CPU{} this process may run on: threads will wait for each other and "
      "the "
      "figures measure that oversubscription (running anyway)",
      *most, usable, usable == 1 ? "" : "s");
}

int default_thread_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  // Count distinct (package, core) pairs among the allowed CPUs: llama.cpp runs best with
  // one thread per physical core.
  std::set<std::pair<std::string, std::string>> cores;
  int allowed = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    ++allowed;
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream pkg(base + "physical_package_id"), core(base + "core_id");
    std::string p, c;
    if (pkg >> p && core >> c)
      cores.insert({p, c});
    else
      cores.insert({"cpu", std::to_string(cpu)});
  }
  return std::max(1, cores.empty() ? allowed : static_cast<int>(cores.size()));
}

}  // namespace edgeprobe::workload
