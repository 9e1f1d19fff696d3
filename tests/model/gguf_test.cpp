#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "model/gguf_info.h"
#include "model/synth.h"
#include "support/run_process.h"

using namespace edgeprobe;
using edgeprobe::test_support::TempDir;

namespace {

// A minimal GGUF writer for hostile files: every field can be set to a lie.
struct GgufBytes {
  std::string b;
  void u32(uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); }
  void u64(uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); }
  void str(const std::string& s) { u64(s.size()); b += s; }
  void header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b += "GGUF";
    u32(version);
    u64(n_tensors);
    u64(n_kv);
  }
  void kv_str(const std::string& k, const std::string& v) { str(k); u32(8); str(v); }
  void kv_u32(const std::string& k, uint32_t v) { str(k); u32(4); u32(v); }
  void tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name);
    u32(static_cast<uint32_t>(dims.size()));
    for (auto d : dims) u64(d);
    u32(type);
    u64(offset);
  }
  void pad_and_data(size_t bytes) {
    while (b.size() % 32) b += '\0';
    b.append(bytes, '\0');
  }
};

std::string expect_bad_input(const std::string& path) {
  try {
    model::read_gguf_info(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted " << path;
  return "";
}

class GgufTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model::SynthOptions o;
    o.shape = model::named_shape("tiny");
    o.quant = "f16";
    o.output_path = dir_->file("tiny-f16.gguf");
    model::synthesize_model(o);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string model_path() { return dir_->file("tiny-f16.gguf"); }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string p = dir_->file(name);
    test_support::write_file(p, bytes);
    return p;
  }
  static TempDir* dir_;
};
TempDir* GgufTest::dir_ = nullptr;

}  // namespace

TEST_F(GgufTest, ReadsTheShapeAndTensorTypesOfASynthesizedModel) {
  const auto info = model::read_gguf_info(model_path());
  EXPECT_EQ(info.shape.architecture, "llama");
  EXPECT_EQ(info.shape.n_layer, 4);
  EXPECT_EQ(info.shape.n_embd, 256);
  EXPECT_EQ(info.shape.n_head_kv, 2);
  EXPECT_EQ(info.shape.n_vocab, 4096);
  EXPECT_EQ(info.tensors.size(), 2u + 4u * 9u + 1u);
  EXPECT_EQ(info.dominant_type(), "f16");
  // 2-D weights in f16 (16 bits), 1-D norms in f32: just over 16 bits per weight.
  EXPECT_GT(info.bits_per_weight(), 16.0);
  EXPECT_LT(info.bits_per_weight(), 16.1);
  EXPECT_TRUE(info.has_chat_template);
  EXPECT_EQ(info.type_histogram().at("f32").tensors, 4 * 2 + 1);
}

TEST_F(GgufTest, SynthesisIsDeterministicPerSeed) {
  model::SynthOptions o;
  o.shape = model::named_shape("tiny");
  o.quant = "f16";
  o.output_path = dir_->file("again.gguf");
  model::synthesize_model(o);
  EXPECT_EQ(model::sha256_file(o.output_path), model::sha256_file(model_path()));
  o.seed = 7;
  o.output_path = dir_->file("other-seed.gguf");
  model::synthesize_model(o);
  EXPECT_NE(model::sha256_file(o.output_path), model::sha256_file(model_path()));
}

TEST_F(GgufTest, Sha256MatchesAKnownVector) {
  const auto p = write("abc.txt", "abc");
  EXPECT_EQ(model::sha256_file(p), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(GgufTest, RejectsMissingEmptyAndDirectoryPaths) {
  EXPECT_NE(expect_bad_input(dir_->file("nope.gguf")).find("does not exist"), std::string::npos);
  EXPECT_NE(expect_bad_input(write("empty.gguf", "")).find("0 bytes"), std::string::npos);
  EXPECT_NE(expect_bad_input(dir_->path()).find("directory"), std::string::npos);
}

TEST_F(GgufTest, RejectsAFileThatIsNotGguf) {
  EXPECT_NE(expect_bad_input(write("text.gguf", "hello, this is not a model\n")).find("not a GGUF file"),
            std::string::npos);
}

TEST_F(GgufTest, RejectsATruncatedModelNamingTheTensor) {
  const std::string bytes = test_support::read_file(model_path());
  const auto msg = expect_bad_input(write("half.gguf", bytes.substr(0, bytes.size() / 2)));
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  // Cut inside the metadata too.
  expect_bad_input(write("head.gguf", bytes.substr(0, 100)));
}

TEST_F(GgufTest, RejectsCountsPastTheEnd) {
  std::string bytes = test_support::read_file(model_path());
  std::string huge_tensors = bytes;
  const uint64_t big = 1ULL << 50;
  std::memcpy(huge_tensors.data() + 8, &big, 8);
  EXPECT_NE(expect_bad_input(write("tensors.gguf", huge_tensors)).find("tensor count"), std::string::npos);
  std::string huge_kv = bytes;
  std::memcpy(huge_kv.data() + 16, &big, 8);
  EXPECT_NE(expect_bad_input(write("kv.gguf", huge_kv)).find("metadata count"), std::string::npos);
  std::string huge_key = bytes;
  std::memcpy(huge_key.data() + 24, &big, 8);
  EXPECT_NE(expect_bad_input(write("key.gguf", huge_key)).find("past the end"), std::string::npos);
}

TEST_F(GgufTest, RejectsHostileTensorTables) {
  auto one_tensor = [](std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t data) {
    GgufBytes g;
    g.header(3, 1, 1);
    g.kv_str("general.architecture", "llama");
    g.tensor("w", std::move(dims), type, offset);
    g.pad_and_data(data);
    return g.b;
  };
  EXPECT_NE(expect_bad_input(write("dim.gguf", one_tensor({1ULL << 41}, 0, 0, 64))).find("absurd dimension"),
            std::string::npos);
  EXPECT_NE(expect_bad_input(write("ndims.gguf", one_tensor({1, 1, 1, 1, 1, 1, 1, 1, 1}, 0, 0, 64))).find("dimensions"),
            std::string::npos);
  EXPECT_NE(expect_bad_input(write("type.gguf", one_tensor({16}, 999, 0, 64))).find("type"), std::string::npos);
  EXPECT_NE(expect_bad_input(write("offset.gguf", one_tensor({16}, 0, 1 << 20, 64))).find("truncated"),
            std::string::npos);
  EXPECT_NE(expect_bad_input(write("block.gguf", one_tensor({17}, 2 /*q4_0*/, 0, 64))).find("multiple"),
            std::string::npos);
}

TEST_F(GgufTest, RejectsHyperparametersThatWouldCrashLlamaCpp) {
  GgufBytes g;
  g.header(3, 0, 3);
  g.kv_str("general.architecture", "llama");
  g.kv_u32("llama.embedding_length", 64);
  g.kv_u32("llama.attention.head_count", 0);
  EXPECT_NE(expect_bad_input(write("heads.gguf", g.b)).find("head_count"), std::string::npos);

  GgufBytes v;
  v.header(7, 0, 0);
  EXPECT_NE(expect_bad_input(write("version.gguf", v.b)).find("version"), std::string::npos);

  GgufBytes arr;
  arr.header(3, 0, 1);
  arr.str("tokenizer.ggml.tokens");
  arr.u32(9);
  arr.u32(8);
  arr.u64(1ULL << 40);
  EXPECT_NE(expect_bad_input(write("array.gguf", arr.b)).find("more than the file holds"), std::string::npos);
}
