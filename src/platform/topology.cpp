#include "platform/topology.h"

#include <fmt/format.h>
#include <hwloc.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

namespace edgeprobe::platform {
namespace {

// Per-CPU ranking key: bigger is faster. Efficiency (hwloc) first, then the hybrid PMU's
// core type, capacity, max frequency. Missing values are -1 for every CPU alike, so they
// do not split a kind.
using KindKey = std::tuple<int, int, int64_t, int64_t>;

int core_type_score(const std::string& type) {
  if (type == "IntelCore" || type == "cpu_core") return 2;
  if (type == "IntelAtom" || type == "cpu_atom") return 1;
  return 0;
}

// Groups CPUs into clusters (same kind and package), ranks them big -> little and labels
// them. `types` and `efficiency` are per os index (may be empty).
void build_clusters(Topology& t, const std::map<int, std::string>& types, const std::map<int, int>& efficiency) {
  std::map<int, KindKey> key_of;
  std::set<KindKey, std::greater<>> kinds;
  for (const auto& cpu : t.cpus) {
    const auto type_it = types.find(cpu.os_index);
    const auto eff_it = efficiency.find(cpu.os_index);
    KindKey key{eff_it == efficiency.end() ? -1 : eff_it->second,
                type_it == types.end() ? 0 : core_type_score(type_it->second), cpu.capacity, cpu.max_freq_khz};
    key_of[cpu.os_index] = key;
    kinds.insert(key);
  }
  std::map<KindKey, int, std::greater<>> rank_of;
  for (const auto& key : kinds) rank_of.emplace(key, static_cast<int>(rank_of.size()));
  const int n_kinds = static_cast<int>(rank_of.size());

  std::map<std::pair<int, int>, Cluster> by_rank_package;
  for (auto& cpu : t.cpus) {
    const KindKey& key = key_of[cpu.os_index];
    Cluster& c = by_rank_package[{rank_of[key], cpu.package_id}];
    c.rank = rank_of[key];
    c.package_id = cpu.package_id;
    c.cpus.push_back(cpu.os_index);
    c.capacity = cpu.capacity;
    c.max_freq_khz = cpu.max_freq_khz;
    c.hwloc_efficiency = std::get<0>(key);
    if (auto it = types.find(cpu.os_index); it != types.end()) c.core_type = it->second;
  }
  t.clusters.clear();
  for (auto& [k, c] : by_rank_package) {
    std::set<std::pair<int, int>> cores;
    for (int os : c.cpus) {
      const auto& cpu = *std::find_if(t.cpus.begin(), t.cpus.end(), [&](const LogicalCpu& x) { return x.os_index == os; });
      // SMT siblings share a core: count the lowest sibling only.
      const int first = cpu.smt_siblings.empty() ? os : *std::min_element(cpu.smt_siblings.begin(), cpu.smt_siblings.end());
      cores.insert({cpu.package_id, first});
    }
    c.n_cores = static_cast<int>(cores.size());
    const int s = core_type_score(c.core_type);
    if (s == 2) {
      c.label = "P-core";
    } else if (s == 1) {
      c.label = "E-core";
    } else if (n_kinds == 1) {
      c.label = "uniform";
    } else if (n_kinds == 2) {
      c.label = c.rank == 0 ? "big" : "little";
    } else if (n_kinds == 3) {
      c.label = c.rank == 0 ? "prime" : c.rank == 1 ? "big" : "little";
    } else {
      c.label = fmt::format("kind{}", c.rank);
    }
    t.clusters.push_back(std::move(c));
  }
  for (size_t i = 0; i < t.clusters.size(); ++i)
    for (int os : t.clusters[i].cpus)
      for (auto& cpu : t.cpus)
        if (cpu.os_index == os) cpu.cluster = static_cast<int>(i);
}

void count(Topology& t) {
  std::set<int> packages;
  std::set<std::pair<int, int>> cores;
  for (const auto& cpu : t.cpus) {
    packages.insert(cpu.package_id);
    const int first = cpu.smt_siblings.empty() ? cpu.os_index
                                                : *std::min_element(cpu.smt_siblings.begin(), cpu.smt_siblings.end());
    cores.insert({cpu.package_id, first});
  }
  t.n_packages = static_cast<int>(packages.size());
  t.n_cores = static_cast<int>(cores.size());
  t.n_logical = static_cast<int>(t.cpus.size());
}

void read_sysfs_cpu_extras(const FsRoot& fs, LogicalCpu& cpu) {
  const std::string base = fmt::format("/sys/devices/system/cpu/cpu{}", cpu.os_index);
  if (auto v = fs.read_int(base + "/cpu_capacity")) cpu.capacity = *v;
  if (auto v = fs.read_int(base + "/cpufreq/cpuinfo_max_freq")) cpu.max_freq_khz = *v;
}

std::vector<int> bitmap_cpus(hwloc_const_bitmap_t set) {
  std::vector<int> out;
  int i = -1;
  while ((i = hwloc_bitmap_next(set, i)) != -1) out.push_back(i);
  return out;
}

// nullopt-like: returns false with `why` when hwloc cannot load a topology.
bool detect_hwloc(const FsRoot& fs, Topology& t, std::string& why) {
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) {
    why = "hwloc_topology_init failed";
    return false;
  }
  if (hwloc_topology_load(topo) != 0) {
    why = "hwloc_topology_load failed";
    hwloc_topology_destroy(topo);
    return false;
  }
  const unsigned api = hwloc_get_api_version();
  t.source = fmt::format("hwloc (API {}.{})", api >> 16, (api >> 8) & 0xff);

  std::map<int, std::string> types;
  std::map<int, int> efficiency;
  const int n_kinds = hwloc_cpukinds_get_nr(topo, 0);
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (int k = 0; k < n_kinds; ++k) {
    int eff = -1;
    unsigned n_infos = 0;
    hwloc_info_s* infos = nullptr;
    if (hwloc_cpukinds_get_info(topo, static_cast<unsigned>(k), set, &eff, &n_infos, &infos, 0) != 0) continue;
    std::string core_type;
    for (unsigned i = 0; i < n_infos; ++i)
      if (std::string(infos[i].name) == "CoreType") core_type = infos[i].value;
    for (int cpu : bitmap_cpus(set)) {
      efficiency[cpu] = eff;
      if (!core_type.empty()) types[cpu] = core_type;
    }
  }
  hwloc_bitmap_free(set);
  if (n_kinds <= 0) t.notes.push_back("hwloc found no CPU kinds: ranking from sysfs capacity/frequency");

  const int n_pu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  for (int i = 0; i < n_pu; ++i) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, static_cast<unsigned>(i));
    LogicalCpu cpu;
    cpu.os_index = static_cast<int>(pu->os_index);
    if (hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu)) {
      cpu.core_id = core->os_index != HWLOC_UNKNOWN_INDEX ? static_cast<int>(core->os_index)
                                                          : static_cast<int>(core->logical_index);
      cpu.smt_siblings = bitmap_cpus(core->cpuset);
    }
    if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu))
      cpu.package_id = pkg->os_index != HWLOC_UNKNOWN_INDEX ? static_cast<int>(pkg->os_index) : 0;
    else
      cpu.package_id = 0;
    read_sysfs_cpu_extras(fs, cpu);
    t.cpus.push_back(cpu);
  }
  for (hwloc_obj_t node = nullptr; (node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node));) {
    NumaNode n;
    n.os_index = static_cast<int>(node->os_index);
    n.cpus = bitmap_cpus(node->cpuset);
    n.memory_bytes = node->attr ? node->attr->numanode.local_memory : 0;
    for (auto& cpu : t.cpus)
      if (std::find(n.cpus.begin(), n.cpus.end(), cpu.os_index) != n.cpus.end()) cpu.numa_node = n.os_index;
    t.numa_nodes.push_back(n);
  }
  for (hwloc_obj_type_t type : {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE,
                                HWLOC_OBJ_L5CACHE, HWLOC_OBJ_L1ICACHE}) {
    for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_obj_by_type(topo, type, obj));) {
      CacheInfo c;
      c.level = static_cast<int>(obj->attr->cache.depth);
      c.type = obj->attr->cache.type == HWLOC_OBJ_CACHE_DATA          ? "Data"
               : obj->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION ? "Instruction"
                                                                      : "Unified";
      c.size_bytes = obj->attr->cache.size;
      c.shared_cpus = bitmap_cpus(obj->cpuset);
      t.caches.push_back(c);
    }
  }
  hwloc_topology_destroy(topo);
  if (t.cpus.empty()) {
    why = "hwloc reported no processing units";
    return false;
  }
  std::sort(t.cpus.begin(), t.cpus.end(), [](const auto& a, const auto& b) { return a.os_index < b.os_index; });
  build_clusters(t, types, efficiency);
  count(t);
  return true;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    try {
      const auto dash = part.find('-');
      if (dash == std::string::npos) {
        out.push_back(std::stoi(part));
      } else {
        const int lo = std::stoi(part.substr(0, dash));
        const int hi = std::stoi(part.substr(dash + 1));
        for (int i = lo; i <= hi && hi - lo < 65536; ++i) out.push_back(i);
      }
    } catch (const std::exception&) {
      // skip malformed parts: a fixture or a vendor kernel may add oddities
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

uint64_t parse_size(const std::string& text) {
  try {
    size_t used = 0;
    const uint64_t value = std::stoull(text, &used);
    const std::string suffix = text.substr(used);
    if (suffix.empty()) return value;
    switch (suffix[0]) {
      case 'K': case 'k': return value << 10;
      case 'M': case 'm': return value << 20;
      case 'G': case 'g': return value << 30;
      default: return 0;
    }
  } catch (const std::exception&) {
    return 0;
  }
}

uint64_t Topology::llc_total_bytes() const {
  int max_level = 0;
  for (const auto& c : caches)
    if (c.type != "Instruction") max_level = std::max(max_level, c.level);
  uint64_t total = 0;
  for (const auto& c : caches)
    if (c.level == max_level && c.type != "Instruction") total += c.size_bytes;
  return total;
}

std::vector<int> Topology::placement_order() const {
  std::vector<int> first, siblings;
  std::set<int> seen_cores;
  for (const auto& cluster : clusters) {
    for (int os : cluster.cpus) {
      const auto it = std::find_if(cpus.begin(), cpus.end(), [&](const LogicalCpu& c) { return c.os_index == os; });
      if (it == cpus.end()) continue;
      const int core_key = it->smt_siblings.empty() ? os : *std::min_element(it->smt_siblings.begin(), it->smt_siblings.end());
      if (seen_cores.insert(core_key).second) first.push_back(os);
      else siblings.push_back(os);
    }
  }
  first.insert(first.end(), siblings.begin(), siblings.end());
  return first;
}

Topology detect_topology_sysfs(const FsRoot& fs) {
  Topology t;
  t.source = "sysfs";
  const std::string cpu_dir = "/sys/devices/system/cpu";
  std::vector<int> ids;
  if (auto online = fs.read_text(cpu_dir + "/online")) ids = parse_cpu_list(*online);
  if (ids.empty()) {
    for (const auto& name : fs.list_dir(cpu_dir))
      if (name.size() > 3 && name.rfind("cpu", 0) == 0 && std::isdigit(static_cast<unsigned char>(name[3])))
        ids.push_back(std::stoi(name.substr(3)));
    std::sort(ids.begin(), ids.end());
  }
  if (ids.empty()) {
    t.notes.push_back("no CPUs under " + fs.path(cpu_dir) + ": " + fs.last_error());
    return t;
  }
  // Hybrid x86 exposes one PMU per core type (Documentation/admin-guide/perf/...; present on
  // Alder Lake and later): the only core-type source sysfs has on x86.
  std::map<int, std::string> types;
  for (const char* pmu : {"cpu_core", "cpu_atom"})
    if (auto list = fs.read_text(fmt::format("/sys/devices/{}/cpus", pmu)))
      for (int cpu : parse_cpu_list(*list)) types[cpu] = pmu;

  std::set<std::tuple<int, std::string, std::vector<int>>> seen_caches;
  for (int id : ids) {
    LogicalCpu cpu;
    cpu.os_index = id;
    const std::string base = fmt::format("{}/cpu{}", cpu_dir, id);
    cpu.package_id = static_cast<int>(fs.read_int(base + "/topology/physical_package_id").value_or(0));
    cpu.core_id = static_cast<int>(fs.read_int(base + "/topology/core_id").value_or(id));
    if (auto s = fs.read_text(base + "/topology/thread_siblings_list")) cpu.smt_siblings = parse_cpu_list(*s);
    if (cpu.smt_siblings.empty()) cpu.smt_siblings = {id};
    read_sysfs_cpu_extras(fs, cpu);
    for (const auto& index : fs.list_dir(base + "/cache")) {
      if (index.rfind("index", 0) != 0) continue;
      const std::string cdir = base + "/cache/" + index;
      CacheInfo c;
      c.level = static_cast<int>(fs.read_int(cdir + "/level").value_or(0));
      c.type = fs.read_text(cdir + "/type").value_or("Unified");
      c.size_bytes = parse_size(fs.read_text(cdir + "/size").value_or(""));
      c.shared_cpus = parse_cpu_list(fs.read_text(cdir + "/shared_cpu_list").value_or(std::to_string(id)));
      if (c.level > 0 && seen_caches.insert({c.level, c.type, c.shared_cpus}).second) t.caches.push_back(c);
    }
    t.cpus.push_back(cpu);
  }
  std::sort(t.caches.begin(), t.caches.end(), [](const CacheInfo& a, const CacheInfo& b) {
    return std::tie(a.level, a.type, a.shared_cpus) < std::tie(b.level, b.type, b.shared_cpus);
  });
  const std::string node_dir = "/sys/devices/system/node";
  for (const auto& name : fs.list_dir(node_dir)) {
    if (name.size() <= 4 || name.rfind("node", 0) != 0 || !std::isdigit(static_cast<unsigned char>(name[4]))) continue;
    NumaNode n;
    n.os_index = std::stoi(name.substr(4));
    n.cpus = parse_cpu_list(fs.read_text(node_dir + "/" + name + "/cpulist").value_or(""));
    // meminfo: "Node 0 MemTotal:  16314536 kB" (drivers/base/node.c)
    if (auto meminfo = fs.read_text(node_dir + "/" + name + "/meminfo")) {
      std::istringstream in(*meminfo);
      std::string line;
      while (std::getline(in, line)) {
        const auto at = line.find("MemTotal:");
        if (at != std::string::npos) n.memory_bytes = std::stoull(line.substr(at + 9)) * 1024;
      }
    }
    for (auto& cpu : t.cpus)
      if (std::find(n.cpus.begin(), n.cpus.end(), cpu.os_index) != n.cpus.end()) cpu.numa_node = n.os_index;
    t.numa_nodes.push_back(n);
  }
  std::sort(t.numa_nodes.begin(), t.numa_nodes.end(), [](const auto& a, const auto& b) { return a.os_index < b.os_index; });
  if (t.caches.empty()) t.notes.push_back("no cache/index* entries in sysfs: cache sizes unknown");
  if (t.numa_nodes.empty()) t.notes.push_back("no NUMA nodes in sysfs");
  build_clusters(t, types, {});
  count(t);
  return t;
}

Topology detect_topology(const FsRoot& fs) {
  if (fs.root() == "/") {
    Topology t;
    std::string why;
    if (detect_hwloc(fs, t, why)) return t;
    Topology s = detect_topology_sysfs(fs);
    s.source = "sysfs (hwloc unavailable: " + why + ")";
    return s;
  }
  return detect_topology_sysfs(fs);
}

nlohmann::json to_json(const Topology& t) {
  nlohmann::json j;
  j["source"] = t.source;
  j["n_packages"] = t.n_packages;
  j["n_cores"] = t.n_cores;
  j["n_logical"] = t.n_logical;
  j["llc_total_bytes"] = t.llc_total_bytes();
  j["clusters"] = nlohmann::json::array();
  for (const auto& c : t.clusters) {
    j["clusters"].push_back({{"rank", c.rank},
                             {"label", c.label},
                             {"package_id", c.package_id},
                             {"cpus", c.cpus},
                             {"n_cores", c.n_cores},
                             {"capacity", c.capacity},
                             {"max_freq_khz", c.max_freq_khz},
                             {"hwloc_efficiency", c.hwloc_efficiency},
                             {"core_type", c.core_type}});
  }
  j["cpus"] = nlohmann::json::array();
  for (const auto& c : t.cpus) {
    j["cpus"].push_back({{"os_index", c.os_index},
                         {"package_id", c.package_id},
                         {"core_id", c.core_id},
                         {"numa_node", c.numa_node},
                         {"cluster", c.cluster},
                         {"capacity", c.capacity},
                         {"max_freq_khz", c.max_freq_khz},
                         {"smt_siblings", c.smt_siblings}});
  }
  j["caches"] = nlohmann::json::array();
  for (const auto& c : t.caches)
    j["caches"].push_back({{"level", c.level}, {"type", c.type}, {"size_bytes", c.size_bytes}, {"shared_cpus", c.shared_cpus}});
  j["numa_nodes"] = nlohmann::json::array();
  for (const auto& n : t.numa_nodes)
    j["numa_nodes"].push_back({{"os_index", n.os_index}, {"cpus", n.cpus}, {"memory_bytes", n.memory_bytes}});
  j["notes"] = t.notes;
  return j;
}

}  // namespace edgeprobe::platform
