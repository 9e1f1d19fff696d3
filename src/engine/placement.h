#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

// Where a model and its compute lived (docs/gpu.md). llama.cpp says this only in log lines
// (devices, layers offloaded, buffers, graph splits) and not at all per op; an engine
// fills what it can tell. No llama.cpp or ggml type here: the result model stores it.
namespace edgeprobe::engine {

// Graph nodes one backend ran, and the weight bytes those nodes read.
struct BackendShare {
  std::string backend;  // "CPU", "Vulkan0"
  int nodes = 0;
  uint64_t weight_bytes = 0;
};

// Nodes of one op on one kind of tensor ("MUL_MAT" on "ffn_up", layer number dropped).
struct NodeGroup {
  std::string op, tensor;
  int count = 0;
  uint64_t weight_bytes = 0;
};

// One graph as the scheduler placed it: a prefill batch or a single decode step.
struct GraphPlacement {
  int n_tokens = 0;
  std::vector<BackendShare> backends;  // most nodes first
  // What ran on the CPU while another backend ran the rest: the GPU's silent fallback,
  // by op and tensor, most weight bytes first. Empty when one backend ran everything.
  std::vector<NodeGroup> cpu_nodes;
};

struct Placement {
  std::vector<std::string> devices;  // llama.cpp's "using device" lines: "Vulkan0 (llvmpipe ...) - 1024 MiB free"
  int layers_offloaded = -1, layers_total = -1;  // "offloaded X/Y layers to GPU"; -1 not said
  std::map<std::string, double> buffers_mib;     // "Vulkan0 model", "CPU KV", "Vulkan0 compute"
  // Weights that could not stay where llama.cpp wanted them, one DEBUG log line each:
  // "tensor 'blk.0.ffn_up.weight' (tq1_0) (and 6 others) cannot be used with preferred
  // buffer type Vulkan0, using CPU instead".
  std::vector<std::string> weights_moved;
  int graph_splits_prefill = -1, graph_splits_decode = -1;  // the scheduler's, as logged
  // From a separate, untimed pass that tallies each node's backend (it synchronizes after
  // every split, so it never runs inside timed work). Absent when not probed.
  std::optional<GraphPlacement> prefill, decode;

  bool empty() const { return devices.empty() && layers_total < 0 && buffers_mib.empty() && !prefill && !decode; }
  // The share of a graph's nodes that `backend` ran; -1 unknown.
  static double node_share(const std::optional<GraphPlacement>& g, const std::string& backend) {
    if (!g) return -1;
    int all = 0, of = 0;
    for (const auto& b : g->backends) {
      all += b.nodes;
      if (b.backend == backend) of += b.nodes;
    }
    return all > 0 ? static_cast<double>(of) / all : -1;
  }
};

}  // namespace edgeprobe::engine
