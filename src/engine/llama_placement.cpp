#include "engine/llama_placement.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace edgeprobe::engine {
namespace {

// The backend that holds a node's output: a host buffer is the CPU's, whichever driver
// allocated it (a GPU backend gives the CPU pinned host memory).
std::string backend_of(ggml_backend_buffer_t buffer) {
  if (!buffer) return "unallocated";
  ggml_backend_buffer_type_t type = ggml_backend_buffer_get_type(buffer);
  if (ggml_backend_buft_is_host(type)) return "CPU";
  if (ggml_backend_dev_t dev = ggml_backend_buft_get_device(type)) return ggml_backend_dev_name(dev);
  return ggml_backend_buft_name(type);
}

// "ffn_up-3" -> "ffn_up": llama.cpp names a layer's tensors with the layer number last.
std::string without_layer(const std::string& name) {
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos || dash + 1 == name.size()) return name;
  const bool digits = std::all_of(name.begin() + static_cast<long>(dash) + 1, name.end(),
                                  [](unsigned char c) { return std::isdigit(c) != 0; });
  return digits ? name.substr(0, dash) : name;
}

}  // namespace

void NodeTally::count(const ggml_tensor* t) {
  if (t->op == GGML_OP_NONE || t->op == GGML_OP_VIEW || t->op == GGML_OP_RESHAPE || t->op == GGML_OP_PERMUTE ||
      t->op == GGML_OP_TRANSPOSE)
    return;  // no work: the data stays where its source is
  const ggml_tensor* owner = t->view_src ? t->view_src : t;
  const std::string backend = backend_of(owner->buffer);
  uint64_t weights = 0;
  for (const ggml_tensor* src : t->src)
    if (src && src->buffer && ggml_backend_buffer_get_usage(src->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS)
      weights += ggml_nbytes(src);
  auto& b = backends[backend];
  b.backend = backend;
  b.nodes += 1;
  b.weight_bytes += weights;
  if (backend != "CPU") return;
  const std::string op = ggml_op_desc(t);
  const std::string tensor = without_layer(t->name);
  auto& g = cpu_groups[{op, tensor}];
  g.op = op;
  g.tensor = tensor;
  g.count += 1;
  g.weight_bytes += weights;
}

GraphPlacement NodeTally::result(int n_tokens) const {
  GraphPlacement g;
  g.n_tokens = n_tokens;
  for (const auto& [name, b] : backends) g.backends.push_back(b);
  std::sort(g.backends.begin(), g.backends.end(), [](const auto& a, const auto& b) { return a.nodes > b.nodes; });
  if (g.backends.size() > 1) {
    for (const auto& [key, group] : cpu_groups) g.cpu_nodes.push_back(group);
    std::sort(g.cpu_nodes.begin(), g.cpu_nodes.end(), [](const auto& a, const auto& b) {
      return a.weight_bytes != b.weight_bytes ? a.weight_bytes > b.weight_bytes : a.count > b.count;
    });
  }
  return g;
}

void read_placement_lines(const std::vector<LogLine>& log, size_t from, Placement& p) {
  static const std::regex offloaded(R"(offloaded (\d+)/(\d+) layers to GPU)");
  static const std::regex buffer(R"((\S+)\s+(model|KV|compute|output)\s+buffer size\s*=\s*([0-9.]+)\s*MiB)");
  static const std::regex splits(R"(graph splits = (\d+)(?: \(with bs=\d+\), (\d+) \(with bs=1\))?)");
  for (size_t i = from; i < log.size(); ++i) {
    const std::string& text = log[i].text;
    std::smatch m;
    if (const auto at = text.find("using device "); at != std::string::npos) {
      p.devices.push_back(text.substr(at + 13));
    } else if (std::regex_search(text, m, offloaded)) {
      p.layers_offloaded = std::stoi(m[1].str());
      p.layers_total = std::stoi(m[2].str());
    } else if (std::regex_search(text, m, buffer)) {
      p.buffers_mib[m[1].str() + " " + m[2].str()] = std::stod(m[3].str());
    } else if (std::regex_search(text, m, splits)) {
      p.graph_splits_prefill = std::stoi(m[1].str());
      p.graph_splits_decode = m[2].matched ? std::stoi(m[2].str()) : p.graph_splits_prefill;
    } else if (text.find("cannot be used with preferred buffer type") != std::string::npos) {
      const auto at = text.find("tensor '");
      p.weights_moved.push_back(at == std::string::npos ? text : text.substr(at));
    }
  }
}

}  // namespace edgeprobe::engine
