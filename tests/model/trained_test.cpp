// The trained model family's names, recipe hashes and cache refusals (unit: nothing is
// trained here; tests/model/trained_quality_test.cpp checks the models themselves).
#include "model/trained.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "model/synth.h"
#include "support/run_process.h"

using namespace edgeprobe;
using edgeprobe::test_support::TempDir;

namespace {

// Points the model cache at a fresh directory for one test.
struct CacheDir {
  TempDir dir;
  std::string previous;
  bool had = false;
  CacheDir() {
    if (const char* p = std::getenv("EDGEPROBE_MODEL_CACHE")) {
      previous = p;
      had = true;
    }
    setenv("EDGEPROBE_MODEL_CACHE", dir.path().c_str(), 1);
  }
  ~CacheDir() {
    if (had)
      setenv("EDGEPROBE_MODEL_CACHE", previous.c_str(), 1);
    else
      unsetenv("EDGEPROBE_MODEL_CACHE");
  }
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

}  // namespace

TEST(TrainedSpec, NamesAndQuantizations) {
  EXPECT_FALSE(model::parse_trained_spec("synth:tiny").has_value());
  EXPECT_FALSE(model::parse_trained_spec("/models/trained:main.gguf").has_value());
  auto s = model::parse_trained_spec("trained:main");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "main");
  EXPECT_EQ(s->quant, "f32");  // the training's own output
  s = model::parse_trained_spec("trained:draft:q3_k_m");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "draft");
  EXPECT_EQ(s->quant, "q3_k_m");
}

TEST(TrainedSpec, UnknownPartsListTheKnownOnes) {
  const std::string name = message_of([] { model::parse_trained_spec("trained:huge"); });
  EXPECT_NE(name.find("unknown trained model 'huge'"), std::string::npos) << name;
  EXPECT_NE(name.find("trained:main, trained:draft"), std::string::npos) << name;
  EXPECT_EQ(name.find('\n'), std::string::npos);
  const std::string quant = message_of([] { model::parse_trained_spec("trained:main:q3_k_x"); });
  EXPECT_NE(quant.find("unknown quantization type 'q3_k_x'"), std::string::npos) << quant;
  EXPECT_NE(quant.find("q4_k_m"), std::string::npos) << quant;
  EXPECT_FALSE(message_of([] { model::parse_trained_spec("trained:"); }).empty());
}

TEST(TrainedRecipe, DimensionsKeepKQuants) {
  // llama-quantize swaps k-quants for q4_0/q5_0 when a row is not a multiple of 256.
  for (const auto& r : model::trained_recipes()) {
    EXPECT_EQ(r.shape.n_embd % 256, 0) << r.name;
    EXPECT_EQ(r.shape.n_ff % 256, 0) << r.name;
    EXPECT_EQ(r.shape.n_vocab % 256, 0) << r.name;
    EXPECT_GT(r.steps, r.warmup_steps) << r.name;
  }
  EXPECT_EQ(model::trained_recipe("main").shape.n_vocab,
            model::trained_recipe("draft").shape.n_vocab);  // one tokenizer
}

TEST(TrainedRecipe, HashCoversEveryField) {
  const auto base = model::trained_recipe("main");
  const std::string h = model::recipe_hash(base);
  EXPECT_EQ(h.size(), 16u);
  EXPECT_EQ(h, model::recipe_hash(base));  // stable
  EXPECT_NE(h, model::recipe_hash(model::trained_recipe("draft")));
  auto changed = [&](auto mutate) {
    auto r = base;
    mutate(r);
    return model::recipe_hash(r) != h;
  };
  EXPECT_TRUE(changed([](auto& r) { r.steps += 1; }));
  EXPECT_TRUE(changed([](auto& r) { r.seed += 1; }));
  EXPECT_TRUE(changed([](auto& r) { r.lr_max *= 1.0001f; }));
  EXPECT_TRUE(changed([](auto& r) { r.lr_min *= 2; }));
  EXPECT_TRUE(changed([](auto& r) { r.warmup_steps += 1; }));
  EXPECT_TRUE(changed([](auto& r) { r.weight_decay += 0.1f; }));
  EXPECT_TRUE(changed([](auto& r) { r.n_ctx *= 2; }));
  EXPECT_TRUE(changed([](auto& r) { r.shape.n_layer += 1; }));
  EXPECT_TRUE(changed([](auto& r) { r.shape.n_ff += 256; }));
  // The cache path carries the hash, so a changed recipe never finds an old file.
  EXPECT_NE(model::trained_model_path("main").find(h), std::string::npos);
}

TEST(TrainedCache, MissingModelNamesTheCommand) {
  CacheDir cache;
  model::TrainOptions o;
  o.train_if_missing = false;
  const std::string m = message_of([&] { model::trained_model("draft", "q4_k_m", o); });
  EXPECT_NE(m.find("edgeprobe train draft"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
}

TEST(TrainedCache, CorruptFileIsRefused) {
  CacheDir cache;
  const std::string path = model::trained_model_path("main");
  EXPECT_EQ(path.rfind(cache.dir.path(), 0), 0u) << path;
  std::ofstream(path) << "GGUF then garbage";
  std::ofstream(path + ".sha256") << std::string(64, '0') << "\n";
  model::TrainOptions o;
  o.train_if_missing = false;
  const std::string m = message_of([&] { model::trained_model("main", "f32", o); });
  EXPECT_NE(m.find("corrupt"), std::string::npos) << m;
  EXPECT_NE(m.find("edgeprobe train main"), std::string::npos) << m;
  // A file with no recorded SHA-256 (written by hand, or cut off before it was recorded)
  // is refused the same way.
  std::filesystem::remove(path + ".sha256");
  EXPECT_NE(message_of([&] { model::trained_model("main", "f32", o); }).find("corrupt"), std::string::npos);
}
