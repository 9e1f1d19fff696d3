// The compact reference file: a round trip, and every damaged or hostile file refused with
// one line (Error kBadInput) before any allocation its header asks for.
#include "fidelity/reference_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core/error.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::fidelity;
using edgeprobe::test_support::TempDir;

namespace {

ReferenceHeader small_header() {
  ReferenceHeader h;
  h.n_vocab = 10;
  h.vocab_sha256 = "abc";
  h.architecture = "llama";
  h.n_ctx = 8;
  h.n_chunks = 2;
  h.top_k = 3;
  h.samples = 2;
  return h;
}

std::string write_small(const TempDir& dir) {
  const auto h = small_header();
  const std::string path = dir.file("r.ref");
  std::vector<int32_t> tokens(16);
  for (int i = 0; i < 16; ++i) tokens[static_cast<size_t>(i)] = i % 10;
  ReferenceWriter w(path, h, tokens);
  for (int r = 0; r < 2 * h.scored_per_chunk(); ++r) {
    CompactRow row{{r % 10, 1, 2}, {-0.5f, -1.5f, -2.5f}, 0.1f, -1.5f, {5, 6}, {-3.f, -4.f}};
    if (r == 1) row.sample_ids.clear(), row.sample_logp.clear();  // a row without a rest
    w.add(row);
  }
  w.finish();
  return path;
}

std::string error_of(const std::string& path) {
  try {
    ReferenceReader r(path);
    for (int i = 0; i < 2 * r.header().scored_per_chunk(); ++i) r.next();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    return e.what();
  }
  return "";
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void put_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace

TEST(ReferenceFile, RoundTripAndStatedSize) {
  TempDir dir;
  const auto path = write_small(dir);
  EXPECT_TRUE(is_reference_file(path));
  ReferenceReader r(path);
  EXPECT_EQ(r.header().n_ctx, 8);
  EXPECT_EQ(r.header().top_k, 3);
  EXPECT_EQ(r.header().samples, 2);
  EXPECT_EQ(r.header().row_bytes(), 8u * (3 + 2) + 8);
  EXPECT_EQ(r.tokens().size(), 16u);
  const auto row = r.next();
  EXPECT_EQ(row.ids, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_FLOAT_EQ(row.rest, 0.1f);
  EXPECT_FLOAT_EQ(row.next_logp, -1.5f);
  EXPECT_EQ(row.sample_ids, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(r.next().sample_ids.size(), 0u);
}

TEST(ReferenceFile, TruncatedOrExtendedIsOneLine) {
  TempDir dir;
  const auto path = write_small(dir);
  const auto bytes = bytes_of(path);
  for (size_t keep : {size_t{0}, size_t{5}, size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    put_bytes(path, bytes.substr(0, keep));
    EXPECT_FALSE(error_of(path).empty()) << keep;
  }
  put_bytes(path, bytes + "x");
  EXPECT_NE(error_of(path).find("past its end"), std::string::npos);
}

TEST(ReferenceFile, HostileHeaderAndRowsAreRefused) {
  TempDir dir;
  const auto path = write_small(dir);
  const auto bytes = bytes_of(path);
  // The header rewritten (its length field with it), the rest of the file as it was.
  auto patched = [&](const std::string& from, const std::string& to) {
    uint32_t n = 0;
    std::memcpy(&n, bytes.data() + 12, 4);
    std::string header = bytes.substr(16, n);
    const auto at = header.find(from);
    EXPECT_NE(at, std::string::npos);
    header.replace(at, from.size(), to);
    n = static_cast<uint32_t>(header.size());
    std::string b = bytes.substr(0, 12) + std::string(reinterpret_cast<const char*>(&n), 4) + header +
                    bytes.substr(16 + header.size() - to.size() + from.size());
    put_bytes(path, b);
    return error_of(path);
  };
  // Sizes that would ask for terabytes: refused by the size check, nothing allocated.
  EXPECT_NE(patched("\"n_chunks\":2", "\"n_chunks\":2000000000").find("header says"), std::string::npos);
  EXPECT_NE(patched("\"n_ctx\":8", "\"n_ctx\":1048576").find("header says"), std::string::npos);
  EXPECT_FALSE(patched("\"n_ctx\":8", "\"n_ctx\":9").empty());
  EXPECT_NE(patched("\"top_k\":3", "\"top_k\":300000").find("out of range"), std::string::npos);
  EXPECT_NE(patched("\"n_vocab\":10,", "").find("lacks a field"), std::string::npos);
  EXPECT_NE(patched("\"samples\":2", "\"samples\":-1").find("out of range"), std::string::npos);
  EXPECT_FALSE(patched("\"top_k\":3", "\"top_k\":-3").empty());
  EXPECT_FALSE(patched("\"n_vocab\":10", "\"n_vocab\":\"x\"").empty());
  {
    std::string b = bytes;
    b[7] = 'X';  // the magic
    put_bytes(path, b);
    EXPECT_NE(error_of(path).find("not a stored fidelity reference"), std::string::npos);
  }
  // A header length past the file.
  {
    std::string b = bytes;
    const uint32_t huge = 0xfffffff0u;
    std::memcpy(b.data() + 12, &huge, 4);
    put_bytes(path, b);
    EXPECT_NE(error_of(path).find("truncated"), std::string::npos);
  }
  // A row with an id out of the vocabulary (the first row's first id, after the tokens).
  {
    std::string b = bytes;
    const size_t row0 = b.size() - 2 * 3 * (8 * 5 + 8);
    const int32_t bad = 99;
    std::memcpy(b.data() + row0, &bad, 4);
    put_bytes(path, b);
    EXPECT_NE(error_of(path).find("id 99"), std::string::npos);
  }
  // A sample out of the vocabulary (the first row's first sample, after its top k and two floats).
  {
    std::string b = bytes;
    const size_t sample0 = b.size() - 2 * 3 * (8 * 5 + 8) + 8 * 3 + 8;
    const int32_t bad = 10;
    std::memcpy(b.data() + sample0, &bad, 4);
    put_bytes(path, b);
    EXPECT_NE(error_of(path).find("sample holds id 10"), std::string::npos);
  }
  // A token out of the vocabulary.
  {
    std::string b = bytes;
    const size_t tok0 = b.size() - 2 * 3 * (8 * 5 + 8) - 16 * 4;
    const int32_t bad = -1;
    std::memcpy(b.data() + tok0, &bad, 4);
    put_bytes(path, b);
    EXPECT_NE(error_of(path).find("token id -1"), std::string::npos);
  }
}
