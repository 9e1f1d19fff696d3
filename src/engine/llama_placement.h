#pragma once
// Private to the engine (it names ggml types): what llama_engine.cpp uses to tell where a
// model and its graphs ran. engine/placement.h holds the result, free of ggml.
#include <ggml-backend.h>
#include <ggml.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend.h"
#include "engine/placement.h"

namespace edgeprobe::engine {

// Counts, for each graph node the scheduler computes, which backend ran it: the node's
// output lives in that backend's buffer (a host buffer is the CPU's, even when a GPU's
// driver allocated it). Answers "no" to every ask, so the scheduler computes each split
// whole and synchronizes once per split: slower than a timed run, never part of one.
struct NodeTally {
  std::map<std::string, BackendShare> backends;
  std::map<std::pair<std::string, std::string>, NodeGroup> cpu_groups;  // (op, tensor)

  // llama.cpp's cb_eval.
  static bool on_node(ggml_tensor* t, bool ask, void* user) {
    if (ask) static_cast<NodeTally*>(user)->count(t);
    return false;
  }
  void count(const ggml_tensor* t);
  GraphPlacement result(int n_tokens) const;
};

// The placement facts llama.cpp logs while it loads a model or makes a context, from the
// captured log's line `from` on.
void read_placement_lines(const std::vector<LogLine>& log, size_t from, Placement& p);

}  // namespace edgeprobe::engine
