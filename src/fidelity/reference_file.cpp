#include "fidelity/reference_file.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/digest.h"
#include "core/error.h"

namespace edgeprobe::fidelity {
namespace {

constexpr char kMagic[8] = {'E', 'P', 'F', 'I', 'D', 'R', 'E', 'F'};
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
constexpr int32_t kMaxCtx = 1 << 20;
constexpr int32_t kMaxVocab = 1 << 24;

nlohmann::json header_json(const ReferenceHeader& h) {
  return {{"n_vocab", h.n_vocab},
          {"vocab_sha256", h.vocab_sha256},
          {"architecture", h.architecture},
          {"model_sha256", h.model_sha256},
          {"model_path", h.model_path},
          {"model_desc", h.model_desc},
          {"engine", h.engine},
          {"n_ctx", h.n_ctx},
          {"n_chunks", h.n_chunks},
          {"top_k", h.top_k},
          {"samples", h.samples},
          {"text", h.text},
          {"text_sha256", h.text_sha256}};
}

template <typename T>
void put(std::ofstream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
T get(const char*& p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  p += sizeof value;
  return value;
}

}  // namespace

std::string vocab_hash(const std::vector<std::string>& token_texts) {
  Sha256 sha;
  for (const auto& t : token_texts) {
    const auto n = static_cast<uint32_t>(t.size());
    sha.update(std::string_view(reinterpret_cast<const char*>(&n), sizeof n));
    sha.update(t);
  }
  return sha.hex();
}

bool is_reference_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, kMagic, sizeof magic) == 0;
}

ReferenceWriter::ReferenceWriter(const std::string& path, const ReferenceHeader& header,
                                 const std::vector<int32_t>& tokens)
    : path_(path), temp_(path + ".tmp"), header_(header) {
  out_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw_bad_input("cannot write the reference {}: choose a writable path", path);
  const std::string json = header_json(header).dump();
  out_.write(kMagic, sizeof kMagic);
  put<uint32_t>(out_, kReferenceSchema);
  put<uint32_t>(out_, static_cast<uint32_t>(json.size()));
  out_.write(json.data(), static_cast<std::streamsize>(json.size()));
  out_.write(reinterpret_cast<const char*>(tokens.data()),
             static_cast<std::streamsize>(tokens.size() * sizeof(int32_t)));
}

void ReferenceWriter::add(const CompactRow& row) {
  for (size_t j = 0; j < row.ids.size(); ++j) {
    put<int32_t>(out_, row.ids[j]);
    put<float>(out_, row.logp[j]);
  }
  put<float>(out_, row.rest);
  put<float>(out_, row.next_logp);
  const bool none = row.sample_ids.empty();
  if (!none && row.sample_ids.size() != static_cast<size_t>(header_.samples))
    throw Error(ErrorKind::kBug, fmt::format("reference {}: a row of {} samples, {} expected", path_,
                                             row.sample_ids.size(), header_.samples));
  for (int j = 0; j < header_.samples; ++j) {
    put<int32_t>(out_, none ? -1 : row.sample_ids[static_cast<size_t>(j)]);
    put<float>(out_, none ? 0.f : row.sample_logp[static_cast<size_t>(j)]);
  }
  ++rows_;
}

void ReferenceWriter::finish() {
  const int64_t want = static_cast<int64_t>(header_.n_chunks) * header_.scored_per_chunk();
  if (rows_ != want)
    throw Error(ErrorKind::kBug,
                fmt::format("reference {}: {} rows written, {} expected", path_, rows_, want));
  out_.flush();
  out_.close();
  if (out_.fail()) throw_environment("writing the reference {} failed (disk full?)", path_);
  std::error_code ec;
  std::filesystem::rename(temp_, path_, ec);
  if (ec) throw_environment("cannot put the reference in place at {}: {}", path_, ec.message());
  finished_ = true;
}

ReferenceWriter::~ReferenceWriter() {
  if (!finished_) {
    out_.close();
    std::remove(temp_.c_str());
  }
}

ReferenceReader::ReferenceReader(const std::string& path) : path_(path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw_bad_input("cannot read the reference {}: {}", path, ec.message());
  in_.open(path, std::ios::binary);
  if (!in_) throw_bad_input("cannot read the reference {}", path);
  char fixed[16];
  if (size < sizeof fixed || !in_.read(fixed, sizeof fixed) || std::memcmp(fixed, kMagic, sizeof kMagic) != 0)
    throw_bad_input(
        "{} is not a stored fidelity reference (make one with `edgeprobe fidelity -m REF --save-reference "
        "FILE`)",
        path);
  const char* p = fixed + sizeof kMagic;
  const auto schema = get<uint32_t>(p);
  const auto header_bytes = get<uint32_t>(p);
  if (schema != kReferenceSchema)
    throw_bad_input(
        "the reference {} has schema {}, this edgeprobe reads {}: compute it again with this version", path,
        schema, kReferenceSchema);
  if (header_bytes > kMaxHeaderBytes || header_bytes > size - sizeof fixed)
    throw_bad_input("the reference {} is truncated or damaged (a header of {} bytes)", path, header_bytes);
  std::string text(header_bytes, '\0');
  in_.read(text.data(), header_bytes);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw_bad_input("the reference {} is damaged: its header is not JSON", path);
  try {
    auto& h = header_;
    h.n_vocab = j.at("n_vocab").get<int32_t>();
    h.vocab_sha256 = j.at("vocab_sha256").get<std::string>();
    h.architecture = j.value("architecture", "");
    h.model_sha256 = j.value("model_sha256", "");
    h.model_path = j.value("model_path", "");
    h.model_desc = j.value("model_desc", "");
    h.engine = j.value("engine", "");
    h.n_ctx = j.at("n_ctx").get<int32_t>();
    h.n_chunks = j.at("n_chunks").get<int32_t>();
    h.top_k = j.at("top_k").get<int32_t>();
    h.samples = j.at("samples").get<int32_t>();
    h.text = j.value("text", "");
    h.text_sha256 = j.value("text_sha256", "");
  } catch (const nlohmann::json::exception&) {
    throw_bad_input("the reference {} is damaged: its header lacks a field or has one of the wrong type",
                    path);
  }
  const auto& h = header_;
  if (h.n_vocab < 2 || h.n_vocab > kMaxVocab || h.n_ctx < 4 || h.n_ctx > kMaxCtx || h.n_chunks < 1 ||
      h.top_k < 1 || h.top_k > kMaxTopK || h.top_k > h.n_vocab || h.samples < 0 || h.samples > kMaxSamples)
    throw_bad_input(
        "the reference {} is damaged: its header is out of range (n_vocab {}, n_ctx {}, chunks {}, top_k {}, "
        "samples {})",
        path, h.n_vocab, h.n_ctx, h.n_chunks, h.top_k, h.samples);
  // The whole size, checked in 128-bit-safe steps before anything is allocated.
  const uint64_t n_tokens = static_cast<uint64_t>(h.n_chunks) * static_cast<uint64_t>(h.n_ctx);
  const uint64_t n_rows = static_cast<uint64_t>(h.n_chunks) * static_cast<uint64_t>(h.scored_per_chunk());
  const uint64_t want = sizeof fixed + header_bytes + n_tokens * 4 + n_rows * h.row_bytes();
  if (h.n_chunks > kMaxCtx || size != want)
    throw_bad_input("the reference {} is {} bytes where its header says {}: {}", path, size, want,
                    size < want ? "truncated; copy it again" : "damaged (bytes past its end)");
  tokens_.resize(n_tokens);
  in_.read(reinterpret_cast<char*>(tokens_.data()), static_cast<std::streamsize>(n_tokens * 4));
  if (!in_) throw_bad_input("the reference {} could not be read to its end", path);
  for (const int32_t t : tokens_)
    if (t < 0 || t >= h.n_vocab)
      throw_bad_input("the reference {} is damaged: token id {} out of its vocabulary", path, t);
  buf_.resize(h.row_bytes());
}

CompactRow ReferenceReader::next() {
  if (!in_.read(buf_.data(), static_cast<std::streamsize>(buf_.size())))
    throw_bad_input("the reference {} ended early", path_);
  const char* p = buf_.data();
  CompactRow row;
  row.ids.resize(static_cast<size_t>(header_.top_k));
  row.logp.resize(static_cast<size_t>(header_.top_k));
  for (int j = 0; j < header_.top_k; ++j) {
    row.ids[static_cast<size_t>(j)] = get<int32_t>(p);
    row.logp[static_cast<size_t>(j)] = get<float>(p);
    const int32_t id = row.ids[static_cast<size_t>(j)];
    const float lp = row.logp[static_cast<size_t>(j)];
    if (id < 0 || id >= header_.n_vocab || !(lp <= 1e-3f) || std::isnan(lp))
      throw_bad_input("the reference {} is damaged: a row holds id {} with ln P {}", path_, id, lp);
  }
  row.rest = get<float>(p);
  row.next_logp = get<float>(p);
  if (!(row.rest >= 0 && row.rest <= 1.0001f) || !(row.next_logp <= 1e-3f) || std::isnan(row.next_logp))
    throw_bad_input("the reference {} is damaged: a row's rest mass {} or ln P(next) {} is no probability",
                    path_, row.rest, row.next_logp);
  int none = 0;
  for (int j = 0; j < header_.samples; ++j) {
    const auto id = get<int32_t>(p);
    const auto lp = get<float>(p);
    if (id == -1) {
      ++none;
      continue;
    }
    if (id < 0 || id >= header_.n_vocab || !(lp <= 1e-3f) || std::isnan(lp))
      throw_bad_input("the reference {} is damaged: a row's sample holds id {} with ln P {}", path_, id, lp);
    row.sample_ids.push_back(id);
    row.sample_logp.push_back(lp);
  }
  if (none != 0 && none != header_.samples)
    throw_bad_input("the reference {} is damaged: a row holds {} of {} samples", path_,
                    header_.samples - none, header_.samples);
  return row;
}

}  // namespace edgeprobe::fidelity
