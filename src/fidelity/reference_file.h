#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "fidelity/score.h"

// The compact stored reference (docs/fidelity.md): a reference computed once, elsewhere
// (another device, backend or CPU variant), kept as top-k log-probabilities plus the rest
// mass per scored position, with the text's token ids and who computed it. A lab checks a
// phone against it without moving the model's full logits.
//
// Layout (little-endian):
//   "EPFIDREF"  u32 schema  u32 header_bytes  header (JSON, <= 64 KiB)
//   tokens: n_chunks * n_ctx  i32
//   rows: per chunk, per scored position (n_ctx - 1 - n_ctx/2 of them):
//         top_k x (i32 id, f32 ln P)   f32 rest mass   f32 ln P(next)
//         samples x (i32 id, f32 ln P): draws from the rest (all ids -1: none, no rest)
// A row is 8 * (top_k + samples) + 8 bytes (392 at k = 32 and 16 samples). The reader checks the whole size
// against the header before it allocates anything, and every id and value as it reads.
namespace edgeprobe::fidelity {

inline constexpr uint32_t kReferenceSchema = 1;
inline constexpr int kDefaultTopK = 32;
inline constexpr int kMaxTopK = 1024;
inline constexpr int kDefaultSamples = 16;
inline constexpr int kMaxSamples = 1024;

struct ReferenceHeader {
  uint32_t schema = kReferenceSchema;
  int32_t n_vocab = 0;
  std::string vocab_sha256;  // vocab_hash() of the model that computed it
  std::string architecture;  // general.architecture
  std::string model_sha256;  // the reference model's file
  std::string model_path;    // as it was given (for people)
  std::string model_desc;    // llama.cpp's description ("llama ?B F16")
  std::string engine;        // where it ran: backend, CPU variant, devices
  int32_t n_ctx = 0;
  int32_t n_chunks = 0;
  int32_t top_k = kDefaultTopK;
  int32_t samples = kDefaultSamples;  // draws from the rest per position
  std::string text;                   // the text's path and SHA-256, as given
  std::string text_sha256;
  int32_t first() const { return n_ctx / 2; }
  int32_t scored_per_chunk() const { return n_ctx - 1 - first(); }
  uint64_t row_bytes() const { return 8ull * static_cast<uint64_t>(top_k + samples) + 8; }
};

// Writes a reference as its chunks are scored.
class ReferenceWriter {
 public:
  // Opens `path` (as path.tmp, renamed by finish()) and writes the header and the tokens.
  ReferenceWriter(const std::string& path, const ReferenceHeader& header, const std::vector<int32_t>& tokens);
  void add(const CompactRow& row);
  // Checks the row count and puts the file in place; throws kEnvironment on a failed write.
  void finish();
  ~ReferenceWriter();

 private:
  std::string path_, temp_;
  ReferenceHeader header_;
  std::ofstream out_;
  int64_t rows_ = 0;
  bool finished_ = false;
};

// Reads a reference: header and tokens at open (checked), rows one by one.
class ReferenceReader {
 public:
  // Throws Error(kBadInput) with one line naming what is wrong: not a reference, another
  // schema, a header out of range, a size that is not what the header says (truncated).
  explicit ReferenceReader(const std::string& path);
  const ReferenceHeader& header() const { return header_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // The next row; throws kBadInput for an id out of range or a value that is no
  // probability.
  CompactRow next();

 private:
  std::string path_;
  ReferenceHeader header_;
  std::vector<int32_t> tokens_;
  std::ifstream in_;
  std::vector<char> buf_;
};

// True when the file starts with the reference's magic (the CLI's --reference takes a
// GGUF model or a stored reference).
bool is_reference_file(const std::string& path);

// SHA-256 over the vocabulary's token texts (each length-prefixed), the identity a stored
// reference and a model are checked by.
std::string vocab_hash(const std::vector<std::string>& token_texts);

}  // namespace edgeprobe::fidelity
