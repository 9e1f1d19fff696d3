#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "platform/topology.h"

namespace edgeprobe::probe {

// Memory bandwidth as decode sees it: every generated token streams all the weights once,
// read-only, from DRAM. Bytes are counted the STREAM way (what the kernel asks for, no
// write-allocate traffic), GB = 1e9 bytes.
struct BandwidthOptions {
  int max_threads = 0;          // 0 = one per physical core (SMT siblings only when asked)
  uint64_t buffer_bytes = 0;    // 0 = 8 x LLC total clamped to 512 MiB..1 GiB (copy uses halves)
  int min_passes = 5;           // timed passes per point (after one untimed warm-up pass)
  double min_seconds = 0.15;    // and at least this long per point
  bool per_cluster = true;      // also measure each cluster alone when there is more than one
  bool pin_threads = true;
  std::string kernel_isa;       // "" = the widest this CPU runs (see bandwidth_kernels.h)
};

struct BandwidthPoint {
  std::string kernel;  // "read" (sum of 64-bit words) or "copy" (b[i] = a[i], counts 2 x bytes)
  std::string scope;   // "device" or "cluster <rank> <label> pkg <id>"
  int threads = 0;
  std::vector<int> cpus;  // where the threads were pinned (empty when unpinned)
  double best_gb_per_s = 0;    // fastest pass: STREAM's convention
  double median_gb_per_s = 0;
  int passes = 0;
  // Share of the CPU the threads wanted that they got over the timed passes (schedstat run
  // over run + run-queue wait; CPU time over threads x wall where schedstat is absent):
  // below ~0.9 other processes took the cores, and the figures are low by about that much.
  double cpu_share = 0;
  // Measured while other processes held the CPUs (probe/contention.h): never a ceiling.
  bool contended() const;
};

// The note a contended probe leaves (summarize_points replaces it rather than adding one).
inline constexpr const char* kContendedNote = "other processes competed for the CPUs:";

struct BandwidthResult {
  uint64_t buffer_bytes = 0;  // read streams all of it; copy moves one half onto the other
  std::string kernel_isa;     // the kernels that ran: "avx512", "avx2", "neon", "generic"
  std::optional<double> huge_page_share;  // of the buffer backed by huge pages (unknown: nullopt)
  std::vector<BandwidthPoint> points;
  // Over device scopes (the thread count that reads fastest) and clean points only: the best
  // pass (STREAM's figure), and the median pass, the decode ceiling: the roofline divides
  // median decode rates by it (like with like; see roofline.h). 0: no clean point.
  double read_best_gb_per_s = 0;
  double read_median_gb_per_s = 0;
  double copy_best_gb_per_s = 0;
  std::vector<std::string> notes;
  double min_cpu_share() const;  // lowest over the points (1 when none)

  // Best (median) clean device-scope read pass with exactly `threads` threads (0 if none).
  double read_gb_per_s_at(int threads) const;
  double read_median_gb_per_s_at(int threads) const;
};

BandwidthResult measure_bandwidth(const platform::Topology& topology, const BandwidthOptions& options = {});
// Recomputes the read and copy figures from the clean points (after points were merged).
void summarize_points(BandwidthResult& result);

// Thread counts a sweep visits for `n` threads: every count up to 8, then powers of two and n.
std::vector<int> thread_sweep(int n);

nlohmann::json to_json(const BandwidthResult& result);
BandwidthResult bandwidth_from_json(const nlohmann::json& j);

}  // namespace edgeprobe::probe
