#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/fs.h"

namespace edgeprobe::platform {

struct LogicalCpu {
  int os_index = -1;     // the N of /sys/devices/system/cpu/cpuN, what sched_setaffinity takes
  int package_id = -1;   // physical_package_id
  int core_id = -1;      // core_id (unique only within a package)
  int numa_node = -1;
  int cluster = -1;      // index into Topology::clusters
  int64_t capacity = -1;        // sysfs cpu_capacity (arm64: 1024 = biggest core), -1 unknown
  int64_t max_freq_khz = -1;    // cpufreq/cpuinfo_max_freq, -1 unknown
  std::vector<int> smt_siblings;  // thread_siblings_list, including this CPU
};

// A set of CPUs of one kind in one package: what a thread can be pinned to and expect the
// same speed. Ranked big -> little (rank 0 is the fastest kind).
struct Cluster {
  int rank = 0;
  std::string label;      // "big", "little", "prime", "P-core", "E-core", "uniform"
  int package_id = -1;
  std::vector<int> cpus;  // os indices
  int n_cores = 0;        // physical cores (SMT siblings counted once)
  int64_t capacity = -1;
  int64_t max_freq_khz = -1;
  int hwloc_efficiency = -1;  // hwloc cpukinds efficiency (higher = faster), -1 unknown
  std::string core_type;      // hwloc "CoreType" / sysfs cpu_core|cpu_atom ("IntelCore")
};

struct CacheInfo {
  int level = 0;
  std::string type;  // "Data", "Instruction", "Unified"
  uint64_t size_bytes = 0;
  std::vector<int> shared_cpus;
};

struct NumaNode {
  int os_index = -1;
  std::vector<int> cpus;
  uint64_t memory_bytes = 0;  // 0 unknown
};

struct Topology {
  std::string source;  // "hwloc (API 2.8)" or "sysfs" (and why hwloc was not used)
  std::vector<LogicalCpu> cpus;  // by os index
  std::vector<Cluster> clusters;  // ranked big -> little, then by package
  std::vector<CacheInfo> caches;  // one entry per distinct cache instance
  std::vector<NumaNode> numa_nodes;
  int n_packages = 0;
  int n_cores = 0;  // physical cores
  int n_logical = 0;
  std::vector<std::string> notes;  // what was not found and why

  // Sum of the distinct last-level cache instances, 0 when unknown. STREAM sizes its
  // arrays against this (each array >= 4x the sum of the last-level caches).
  uint64_t llc_total_bytes() const;
  // CPUs in the order a probe should add threads: one per physical core, fastest cluster
  // first, SMT siblings only after all cores.
  std::vector<int> placement_order() const;
};

// hwloc when the root is "/" (cpukinds give the big/little ranking; hwloc docs,
// "Kinds of CPU cores"), sysfs under the root otherwise or when hwloc fails. sysfs ranking
// uses cpu_capacity (Documentation/ABI/testing/sysfs-devices-system-cpu), else
// cpuinfo_max_freq, else the hybrid PMU lists /sys/devices/cpu_core|cpu_atom/cpus.
Topology detect_topology(const FsRoot& fs);
Topology detect_topology_sysfs(const FsRoot& fs);

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; malformed parts are skipped.
std::vector<int> parse_cpu_list(const std::string& text);
// "32K", "1024K", "16M", "512" -> bytes; 0 when malformed.
uint64_t parse_size(const std::string& text);

nlohmann::json to_json(const Topology& topology);

}  // namespace edgeprobe::platform
