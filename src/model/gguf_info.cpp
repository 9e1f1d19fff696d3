#include "model/gguf_info.h"

#include <ggml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

#include "core/digest.h"
#include "core/error.h"

namespace edgeprobe::model {
namespace {

// GGUF value types, from the GGUF specification (ggml/docs/gguf.md).
enum GgufType : uint32_t {
  kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64, kTypeCount
};

size_t scalar_size(uint32_t type) {
  switch (type) {
    case kU8: case kI8: case kBool: return 1;
    case kU16: case kI16: return 2;
    case kU32: case kI32: case kF32: return 4;
    case kU64: case kI64: case kF64: return 8;
    default: return 0;
  }
}

// Every read is checked against the file size, so a count or length past the end is an
// error naming the offset instead of a huge allocation or an out-of-bounds read.
class BoundedReader {
 public:
  BoundedReader(const std::string& path, uint64_t size) : in_(path, std::ios::binary), size_(size), path_(path) {
    if (!in_) throw_bad_input("cannot open model file '{}': {}", path, std::strerror(errno));
  }
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  void read(void* dst, uint64_t n, const char* what) {
    if (n > remaining()) fail("{} of {} bytes at offset {} runs past the end of the file ({} bytes)", what, n, pos_, size_);
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!in_) fail("read error at offset {} while reading {}", pos_, what);
    pos_ += n;
  }
  template <typename T>
  T read_pod(const char* what) {
    T value{};
    read(&value, sizeof(T), what);
    return value;
  }
  std::string read_string(const char* what) {
    const auto length = read_pod<uint64_t>(what);
    if (length > remaining()) fail("{} claims {} bytes at offset {}, past the end of the file", what, length, pos_);
    std::string s(length, '\0');
    read(s.data(), length, what);
    return s;
  }
  void skip(uint64_t n, const char* what) {
    if (n > remaining()) fail("{} of {} bytes at offset {} runs past the end of the file", what, n, pos_);
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    pos_ += n;
  }
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    throw_bad_input("model file '{}' is not a valid GGUF file: {}", path_,
                    fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  std::ifstream in_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::string path_;
};

struct Scalar {
  bool is_int = false;
  int64_t i = 0;
  std::string s;
  bool is_string = false;
};

Scalar read_scalar(BoundedReader& r, uint32_t type) {
  Scalar v;
  switch (type) {
    case kU8: v.i = r.read_pod<uint8_t>("u8 value"); v.is_int = true; break;
    case kI8: v.i = r.read_pod<int8_t>("i8 value"); v.is_int = true; break;
    case kU16: v.i = r.read_pod<uint16_t>("u16 value"); v.is_int = true; break;
    case kI16: v.i = r.read_pod<int16_t>("i16 value"); v.is_int = true; break;
    case kU32: v.i = r.read_pod<uint32_t>("u32 value"); v.is_int = true; break;
    case kI32: v.i = r.read_pod<int32_t>("i32 value"); v.is_int = true; break;
    case kBool: v.i = r.read_pod<uint8_t>("bool value"); v.is_int = true; break;
    case kU64: {
      const auto u = r.read_pod<uint64_t>("u64 value");
      v.i = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? -1 : static_cast<int64_t>(u);
      v.is_int = true;
      break;
    }
    case kI64: v.i = r.read_pod<int64_t>("i64 value"); v.is_int = true; break;
    case kF32: r.read_pod<float>("f32 value"); break;
    case kF64: r.read_pod<double>("f64 value"); break;
    case kString: v.s = r.read_string("string value"); v.is_string = true; break;
    default: r.fail("unknown metadata value type {}", type);
  }
  return v;
}

// Hyperparameters we check ourselves: llama.cpp divides by some of them before it checks
// tensor shapes, so a hostile value would crash it rather than fail cleanly.
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxEmbd = 1 << 20;

}  // namespace

uint64_t GgufInfo::n_params() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += static_cast<uint64_t>(t.n_elements);
  return n;
}

uint64_t GgufInfo::weight_bytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.n_bytes;
  return n;
}

double GgufInfo::bits_per_weight() const {
  const uint64_t params = n_params();
  return params == 0 ? 0.0 : 8.0 * static_cast<double>(weight_bytes()) / static_cast<double>(params);
}

std::map<std::string, GgufInfo::TypeStats> GgufInfo::type_histogram() const {
  std::map<std::string, TypeStats> histogram;
  for (const auto& t : tensors) {
    auto& s = histogram[t.type];
    s.tensors += 1;
    s.bytes += t.n_bytes;
    s.params += static_cast<uint64_t>(t.n_elements);
  }
  return histogram;
}

std::string GgufInfo::dominant_type() const {
  // Only 2-D weights count: 1-D norms are f32 in every quantisation.
  std::map<std::string, uint64_t> bytes;
  for (const auto& t : tensors)
    if (t.shape.size() >= 2) bytes[t.type] += t.n_bytes;
  std::string best;
  uint64_t best_bytes = 0;
  for (const auto& [type, n] : bytes)
    if (n > best_bytes) best = type, best_bytes = n;
  return best;
}

GgufInfo read_gguf_info(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw_bad_input("model file '{}' does not exist", path);
  if (std::filesystem::is_directory(path, ec)) throw_bad_input("model path '{}' is a directory, not a GGUF file", path);
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw_bad_input("cannot stat model file '{}': {}", path, ec.message());

  GgufInfo info;
  info.path = path;
  info.file_bytes = size;
  BoundedReader r(path, size);

  char magic[4];
  if (size < 4) r.fail("the file is only {} bytes long", size);
  r.read(magic, 4, "magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) {
    throw_bad_input("model file '{}' is not a GGUF file (magic bytes are not 'GGUF'); "
                    "convert it with llama.cpp's convert_hf_to_gguf.py", path);
  }
  info.version = r.read_pod<uint32_t>("version");
  if (info.version < 2 || info.version > 3) r.fail("unsupported GGUF version {} (edgeprobe reads 2 and 3)", info.version);
  const auto n_tensors = r.read_pod<uint64_t>("tensor count");
  const auto n_kv = r.read_pod<uint64_t>("metadata count");
  // Each KV needs at least 12 bytes (key length + type), each tensor info at least 24.
  if (n_kv > r.remaining() / 12) r.fail("metadata count {} cannot fit in the file", n_kv);
  if (n_tensors > r.remaining() / 24) r.fail("tensor count {} cannot fit in the file", n_tensors);

  std::map<std::string, int64_t> ints;
  uint64_t alignment = 32;
  int64_t n_vocab_tokens = -1;
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key = r.read_string("metadata key");
    const auto type = r.read_pod<uint32_t>("metadata type");
    if (type == kArray) {
      const auto elem_type = r.read_pod<uint32_t>("array element type");
      const auto n = r.read_pod<uint64_t>("array length");
      if (elem_type == kString) {
        if (n > r.remaining() / 8) r.fail("array '{}' claims {} strings, more than the file holds", key, n);
        for (uint64_t j = 0; j < n; ++j) r.skip(r.read_pod<uint64_t>("string length"), "array string");
      } else if (const size_t es = scalar_size(elem_type); es > 0) {
        if (n > r.remaining() / es) r.fail("array '{}' claims {} elements, more than the file holds", key, n);
        r.skip(n * es, "array data");
      } else {
        r.fail("array '{}' has unsupported element type {}", key, elem_type);
      }
      if (key == "tokenizer.ggml.tokens") n_vocab_tokens = static_cast<int64_t>(n);
      continue;
    }
    if (type >= kTypeCount) r.fail("metadata '{}' has unknown type {}", key, type);
    const Scalar v = read_scalar(r, type);
    if (v.is_int) ints[key] = v.i;
    if (v.is_string) {
      if (key == "general.architecture") info.shape.architecture = v.s;
      else if (key == "general.name") info.name = v.s;
      else if (key == "tokenizer.ggml.model") info.tokenizer_model = v.s;
      else if (key == "tokenizer.chat_template") info.has_chat_template = !v.s.empty();
    }
    if (key == "general.alignment") {
      if (!v.is_int || v.i <= 0 || (v.i & (v.i - 1)) != 0 || v.i > 1 << 16)
        r.fail("general.alignment must be a power of two, got {}", v.i);
      alignment = static_cast<uint64_t>(v.i);
    }
  }

  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.name = r.read_string("tensor name");
    if (t.name.size() >= GGML_MAX_NAME) r.fail("tensor name '{}...' is longer than ggml allows", t.name.substr(0, 40));
    const auto n_dims = r.read_pod<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > GGML_MAX_DIMS) r.fail("tensor '{}' has {} dimensions (1..{} allowed)", t.name, n_dims, GGML_MAX_DIMS);
    t.n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const auto ne = r.read_pod<int64_t>("tensor dimension");
      if (ne <= 0 || ne > (int64_t{1} << 40)) r.fail("tensor '{}' has an absurd dimension {}", t.name, ne);
      if (t.n_elements > std::numeric_limits<int64_t>::max() / ne) r.fail("tensor '{}' has too many elements", t.name);
      t.n_elements *= ne;
      t.shape.push_back(ne);
    }
    const auto type = r.read_pod<uint32_t>("tensor type");
    if (type >= GGML_TYPE_COUNT || ggml_type_size(static_cast<ggml_type>(type)) == 0 ||
        ggml_blck_size(static_cast<ggml_type>(type)) == 0) {
      r.fail("tensor '{}' has unknown or removed type {}", t.name, type);
    }
    const auto gtype = static_cast<ggml_type>(type);
    t.type = ggml_type_name(gtype);
    const int64_t block = ggml_blck_size(gtype);
    if (t.shape[0] % block != 0) r.fail("tensor '{}' row length {} is not a multiple of {}'s block {}", t.name, t.shape[0], t.type, block);
    const double bytes = static_cast<double>(t.n_elements / block) * static_cast<double>(ggml_type_size(gtype));
    if (bytes > static_cast<double>(size)) r.fail("tensor '{}' needs {:.0f} bytes, more than the whole file", t.name, bytes);
    t.n_bytes = static_cast<uint64_t>(t.n_elements / block) * ggml_type_size(gtype);
    t.offset = r.read_pod<uint64_t>("tensor offset");
    info.tensors.push_back(std::move(t));
  }

  const uint64_t data_start = (r.pos() + alignment - 1) / alignment * alignment;
  info.data_offset = data_start;
  for (const auto& t : info.tensors) {
    if (t.offset % alignment != 0) r.fail("tensor '{}' offset {} is not aligned to {}", t.name, t.offset, alignment);
    if (t.offset > size || data_start + t.offset + t.n_bytes > size) {
      throw_bad_input("model file '{}' is truncated: tensor '{}' ends at byte {} but the file has {} bytes; "
                      "download or copy it again", path, t.name, data_start + t.offset + t.n_bytes, size);
    }
  }

  auto& s = info.shape;
  const std::string arch = s.architecture;
  if (arch.empty()) r.fail("general.architecture is missing");
  auto get = [&](const std::string& key) -> int64_t {
    auto it = ints.find(arch + "." + key);
    return it == ints.end() ? 0 : it->second;
  };
  s.n_ctx_train = get("context_length");
  s.n_embd = get("embedding_length");
  s.n_layer = get("block_count");
  s.n_ff = get("feed_forward_length");
  s.n_head = get("attention.head_count");
  s.n_head_kv = ints.count(arch + ".attention.head_count_kv") ? get("attention.head_count_kv") : s.n_head;
  s.n_vocab = get("vocab_size");
  s.n_expert = get("expert_count");
  s.n_expert_used = get("expert_used_count");
  if (s.n_vocab == 0 && n_vocab_tokens > 0) s.n_vocab = n_vocab_tokens;
  if (auto it = ints.find("general.file_type"); it != ints.end()) info.file_type = it->second;

  if (s.n_layer < 0 || s.n_layer > kMaxLayers) r.fail("{}.block_count = {} is absurd", arch, s.n_layer);
  if (s.n_embd < 0 || s.n_embd > kMaxEmbd) r.fail("{}.embedding_length = {} is absurd", arch, s.n_embd);
  if (s.n_head < 0 || s.n_head_kv < 0 || s.n_head > kMaxEmbd || s.n_head_kv > kMaxEmbd) {
    r.fail("{} attention head counts ({}, {}) are absurd", arch, s.n_head, s.n_head_kv);
  }
  if (s.n_embd > 0 && s.n_head == 0) r.fail("{}.attention.head_count is 0 or missing", arch);
  if (s.n_head > 0 && s.n_embd % s.n_head != 0) r.fail("embedding length {} is not divisible by {} heads", s.n_embd, s.n_head);
  if (s.n_head_kv > 0 && s.n_head % s.n_head_kv != 0) r.fail("{} heads are not divisible by {} KV heads", s.n_head, s.n_head_kv);
  if (s.n_expert < 0 || s.n_expert > 4096 || s.n_expert_used < 0 || s.n_expert_used > s.n_expert)
    r.fail("{} expert counts ({} used of {}) are absurd", arch, s.n_expert_used, s.n_expert);
  if (s.n_ctx_train < 0 || s.n_ctx_train > (int64_t{1} << 24)) r.fail("{}.context_length = {} is absurd", arch, s.n_ctx_train);
  return info;
}

std::string sha256_file(const std::string& path) { return edgeprobe::sha256_file(path); }

}  // namespace edgeprobe::model
