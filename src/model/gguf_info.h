#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace edgeprobe::model {

// What a GGUF file is, read by edgeprobe's own bounds-checked parser before llama.cpp
// sees the file (llama.cpp aborts on some hostile files instead of returning an error).
struct TensorInfo {
  std::string name;
  std::string type;          // ggml type name: "q4_0", "f16", ...
  std::vector<int64_t> shape;
  int64_t n_elements = 0;
  uint64_t n_bytes = 0;
  uint64_t offset = 0;  // from the start of the data section (GgufInfo::data_offset)
};

struct ModelShape {
  std::string architecture;  // "llama"
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_ff = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  // Mixture of experts: each layer holds n_expert feed-forward experts (the `*_exps`
  // tensors, one slice per expert) and a token is routed through n_expert_used of them.
  // 0 for a dense model.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t head_dim() const { return n_head > 0 ? n_embd / n_head : 0; }
  // The share of an expert tensor one token reads: n_expert_used / n_expert (1 when dense).
  double active_expert_share() const {
    return n_expert > 0 && n_expert_used > 0 && n_expert_used <= n_expert
               ? static_cast<double>(n_expert_used) / static_cast<double>(n_expert)
               : 1.0;
  }
};

struct GgufInfo {
  std::string path;
  uint64_t file_bytes = 0;
  uint32_t version = 0;
  std::string name;          // general.name
  int64_t file_type = -1;    // general.file_type (llama_ftype)
  uint64_t data_offset = 0;  // where the tensor data section starts in the file
  ModelShape shape;
  std::vector<TensorInfo> tensors;
  bool has_chat_template = false;
  std::string tokenizer_model;  // tokenizer.ggml.model

  uint64_t n_params() const;
  uint64_t weight_bytes() const;
  double bits_per_weight() const;
  // tensor type -> {count, bytes, params}
  struct TypeStats { int64_t tensors = 0; uint64_t bytes = 0; uint64_t params = 0; };
  std::map<std::string, TypeStats> type_histogram() const;
  // The type holding most of the weight bytes ("q4_0"); what a user calls the quantisation.
  std::string dominant_type() const;
};

// Parses the header, metadata and tensor table; checks every count, length, offset and
// dimension against the file size. Throws edgeprobe::Error(kBadInput) naming the problem.
GgufInfo read_gguf_info(const std::string& path);

// Hex SHA-256 of a whole file (streams it; OpenSSL libcrypto).
std::string sha256_file(const std::string& path);

}  // namespace edgeprobe::model
