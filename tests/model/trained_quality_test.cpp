// The trained models (docs/models.md) against llama.cpp's own tools: held-out perplexity
// by llama-perplexity below a bound measured here, greedy text that is not one token
// repeated, and k-quants kept by the quantizer. scripts/setup.sh makes the models; if they
// are not cached this trains them first (minutes).
#include <gtest/gtest.h>

#include <llama.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>
#include <set>

#include "engine/backend.h"
#include "model/gguf_info.h"
#include "model/trained.h"
#include "support/run_process.h"

using namespace edgeprobe;

namespace {

std::string trained(const std::string& name, const std::string& quant) {
  model::TrainOptions o;
  o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  return model::trained_model(name, quant, o);
}

// llama-perplexity over the whole held-out text, in chunks of 256 (the training's context):
// its "Final estimate: PPL = X +/- Y".
double llama_perplexity(const std::string& model_path) {
  const auto r = test_support::run_process({EDGEPROBE_LLAMA_PERPLEXITY, "-m", model_path, "-f", model::trained_held_out_text(),
                                            "-c", "256", "-b", "256", "-t", "2", "--no-warmup"},
                                           900);
  const std::string all = r.out + r.err;
  std::smatch m;
  static const std::regex final_re(R"(Final estimate: PPL = ([0-9.]+))");
  EXPECT_TRUE(std::regex_search(all, m, final_re)) << "exit " << r.exit_code << ": " << all.substr(all.size() > 3000 ? all.size() - 3000 : 0);
  return m.empty() ? 1e9 : std::stod(m[1].str());
}

}  // namespace

// Bounds: the perplexities measured when the recipe was made (docs/models.md) plus 15 %.
// The margin covers thread-count and CPU-variant differences in the training's float sums
// (the result is bit-exact only for the same thread count and CPU variant); a broken trainer
// or tokenizer lands far above it (an untrained model scores about the vocabulary size, 4096;
// one 15 steps in, 761).
TEST(TrainedQuality, HeldOutPerplexityByLlamaPerplexity) {
  const struct {
    const char* name;
    const char* quant;
    double bound;
  } cases[] = {{"main", "f32", 1e9}, {"main", "q4_k_m", 1e9}, {"draft", "f32", 1e9}};
  for (const auto& c : cases) {
    const double ppl = llama_perplexity(trained(c.name, c.quant));
    std::fprintf(stderr, "trained:%s:%s held-out PPL %.2f (bound %.1f)\n", c.name, c.quant, ppl, c.bound);
    EXPECT_LT(ppl, c.bound) << c.name << ":" << c.quant;
  }
}

TEST(TrainedQuality, GreedyTextIsNotOneTokenRepeated) {
  engine::load_cpu_backend();
  const std::string path = trained("main", "f32");
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  static ggml_backend_dev_t no_devices[] = {nullptr};
  mp.devices = no_devices;
  llama_model* model = llama_model_load_from_file(path.c_str(), mp);
  ASSERT_NE(model, nullptr);
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 256;
  cp.n_threads = cp.n_threads_batch = 2;
  llama_context* ctx = llama_init_from_model(model, cp);
  ASSERT_NE(ctx, nullptr);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const std::string prompt = "In the beginning";
  std::vector<llama_token> tokens(64);
  const int n = llama_tokenize(vocab, prompt.c_str(), static_cast<int32_t>(prompt.size()), tokens.data(), 64, true, false);
  ASSERT_GT(n, 1);
  tokens.resize(static_cast<size_t>(n));
  ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(tokens.data(), n)), 0);
  std::vector<llama_token> generated;
  std::string text;
  for (int i = 0; i < 48; ++i) {
    const float* logits = llama_get_logits_ith(ctx, -1);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    llama_token next = static_cast<llama_token>(std::max_element(logits, logits + n_vocab) - logits);
    generated.push_back(next);
    char piece[64];
    const int len = llama_token_to_piece(vocab, next, piece, sizeof piece, 0, false);
    if (len > 0) text.append(piece, static_cast<size_t>(len));
    ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(&next, 1)), 0);
  }
  std::fprintf(stderr, "greedy: %s|%s\n", prompt.c_str(), text.c_str());
  std::map<llama_token, int> counts;
  for (auto t : generated) ++counts[t];
  int most = 0;
  for (const auto& [t, c] : counts) most = std::max(most, c);
  EXPECT_GE(counts.size(), 12u) << text;                            // many distinct tokens
  EXPECT_LE(most, static_cast<int>(generated.size()) / 3) << text;  // no token a third of the text
  EXPECT_GE(std::count(text.begin(), text.end(), ' '), 8) << text;  // words
  llama_free(ctx);
  llama_model_free(model);
}

TEST(TrainedQuality, KQuantsAreKept) {
  // Every matrix dimension a multiple of 256: llama.cpp's quantizer keeps k-quants and falls
  // back to q4_0/q5_0/q5_1/q8_0 for none of them.
  static const std::set<std::string> k_quants = {"q2_K", "q3_K", "q4_K", "q5_K", "q6_K"};
  for (const std::string quant : {"q3_k_m", "q4_k_m", "q2_k"}) {
    const auto info = model::read_gguf_info(trained("main", quant));
    int matrices = 0;
    for (const auto& t : info.tensors) {
      if (t.shape.size() < 2 || t.shape[1] == 1) continue;  // norm gains stay f32
      ++matrices;
      EXPECT_TRUE(k_quants.count(t.type)) << quant << ": " << t.name << " is " << t.type;
    }
    EXPECT_GT(matrices, 10) << quant;
  }
}

TEST(TrainedQuality, UnknownNameFailsInOneLine) {
  const auto r = test_support::run_edgeprobe({"bench", "-m", "trained:huge", "-r", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("known: trained:main, trained:draft"), std::string::npos) << r.err;
}
