#include "fidelity/fidelity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/error.h"
#include "model/trained.h"

namespace edgeprobe::fidelity {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// fn(i) for i in [0, n) on up to n_threads threads (contiguous ranges: each thread walks
// its own rows of the logits).
template <typename Fn>
void parallel_for(int n, int n_threads, const Fn& fn) {
  const int t = std::clamp(n_threads, 1, std::max(1, n));
  if (t == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(t));
  for (int w = 0; w < t; ++w) {
    const int lo = static_cast<int>(static_cast<int64_t>(n) * w / t),
              hi = static_cast<int>(static_cast<int64_t>(n) * (w + 1) / t);
    workers.emplace_back([lo, hi, &fn] {
      for (int i = lo; i < hi; ++i) fn(i);
    });
  }
  for (auto& w : workers) w.join();
}

// llama-perplexity's default logical batch: it decodes 2048 / c chunks side by side, each
// its own sequence (larger matrix products than one chunk at a time: x1.46 slower without).
constexpr int kBatchTokens = 2048;

int chunks_per_batch(const ChunkSettings& s) {
  return std::clamp(kBatchTokens / s.n_ctx, 1, std::max(1, s.n_chunks));
}

engine::ContextOptions chunk_context(engine::ContextOptions o, int n_ctx, int n_seqs) {
  // n_seqs sequences of n_ctx positions decoded as one logical batch, so the scored rows are
  // llama.cpp's own output buffer (llama-perplexity's n_batch >= n_ctx case).
  o.n_ctx = n_ctx * n_seqs;
  o.n_batch = n_ctx * n_seqs;
  o.n_ubatch = std::min(o.n_ubatch, o.n_batch);
  o.n_seqs = n_seqs;
  // Two contexts take turns, and the scoring runs between them: a threadpool that polled
  // after its graph would spin against the other's work (x1.3-1.6 slower than
  // llama-perplexity on 2 busy cores, measured); threads sleep when done.
  o.poll = 0;
  return o;
}

// The output row of scored position i of the k-th chunk of a batch: each chunk has
// n_ctx - first output rows, the last (no next token to score) unused.
size_t out_row(int k, int i, const ChunkSettings& s) {
  return static_cast<size_t>(k) * static_cast<size_t>(s.n_ctx - s.first()) + static_cast<size_t>(i);
}

// Chunks [chunk, chunk + n) as decoded: BOS in place of each one's first token when the
// model adds one.
std::vector<engine::Token> chunks_at(const engine::LoadedModel& model,
                                     const std::vector<engine::Token>& tokens, int chunk, int n, int n_ctx) {
  const auto begin = tokens.begin() + static_cast<std::ptrdiff_t>(chunk) * n_ctx;
  std::vector<engine::Token> c(begin, begin + static_cast<std::ptrdiff_t>(n) * n_ctx);
  if (model.adds_bos() && model.bos_token() >= 0)
    for (int k = 0; k < n; ++k) c[static_cast<size_t>(k) * static_cast<size_t>(n_ctx)] = model.bos_token();
  return c;
}

const float* decode_or_refuse(engine::Context& ctx, const std::vector<engine::Token>& chunks, int first,
                              int n = 1) {
  const float* rows = ctx.decode_scoring(chunks, first, n);
  if (!rows) throw_bad_input("this engine gives no logits: fidelity runs on the in-process llama.cpp engine");
  return rows;
}

}  // namespace

std::string default_text_path() {
  // The trained models' held-out text (every 20th chapter of the King James Bible, never
  // trained on): extracted from Debian's bible-kjv-text on first use, then cached.
  return model::trained_held_out_text();
}

std::vector<engine::Token> chunk_text(const engine::LoadedModel& model, const std::string& text,
                                      ChunkSettings& settings) {
  if (settings.n_ctx < 4)
    throw_bad_input("-c {} is too small: a chunk needs at least 4 tokens", settings.n_ctx);
  std::vector<engine::Token> tokens = model.tokenize(text, /*add_special=*/true);
  const int available = static_cast<int>(tokens.size() / static_cast<size_t>(settings.n_ctx));
  if (available < 1)
    throw_bad_input(
        "the text tokenizes to {} tokens, fewer than one chunk of -c {}: give a longer --text or a smaller "
        "-c",
        tokens.size(), settings.n_ctx);
  settings.n_chunks = settings.n_chunks < 0 ? available : std::min(settings.n_chunks, available);
  if (settings.n_chunks < 1) throw_bad_input("--chunks must be at least 1");
  tokens.resize(static_cast<size_t>(settings.n_chunks) * static_cast<size_t>(settings.n_ctx));
  return tokens;
}

std::string vocab_hash(const engine::LoadedModel& model) {
  std::vector<std::string> texts;
  texts.reserve(static_cast<size_t>(model.n_vocab()));
  for (int32_t t = 0; t < model.n_vocab(); ++t) texts.push_back(model.token_text(t));
  return fidelity::vocab_hash(texts);
}

std::string vocab_difference(const engine::LoadedModel& model, const engine::LoadedModel& ref) {
  if (model.n_vocab() != ref.n_vocab())
    return fmt::format("the reference has a vocabulary of {} tokens, the model {}", ref.n_vocab(),
                       model.n_vocab());
  for (int32_t t = 0; t < model.n_vocab(); ++t) {
    const std::string a = model.token_text(t), b = ref.token_text(t);
    if (a != b) return fmt::format("token {} is '{}' in the model and '{}' in the reference", t, a, b);
  }
  if (model.adds_bos() != ref.adds_bos() || model.bos_token() != ref.bos_token())
    return "the model and the reference differ in their BOS token";
  return "";
}

std::vector<PositionScore> compare_models(const engine::LoadedModel& model, const engine::LoadedModel& ref,
                                          const std::vector<engine::Token>& tokens, const ChunkSettings& s,
                                          const engine::ContextOptions& context, Timings& timings,
                                          const Progress& progress) {
  const int group = chunks_per_batch(s);
  const auto o = chunk_context(context, s.n_ctx, group);
  auto model_ctx = model.new_context(o);
  auto ref_ctx = ref.new_context(o);
  const int n_vocab = model.n_vocab(), first = s.first(), n_scored = s.scored_per_chunk();
  std::vector<PositionScore> scores(static_cast<size_t>(s.n_chunks) * static_cast<size_t>(n_scored));
  for (int c0 = 0; c0 < s.n_chunks; c0 += group) {
    const int n = std::min(group, s.n_chunks - c0);
    const auto chunks = chunks_at(model, tokens, c0, n, s.n_ctx);
    auto t0 = Clock::now();
    const float* ref_rows = decode_or_refuse(*ref_ctx, chunks, first, n);
    timings.decode_ref += since(t0);
    t0 = Clock::now();
    const float* model_rows = decode_or_refuse(*model_ctx, chunks, first, n);
    timings.decode_model += since(t0);
    t0 = Clock::now();
    PositionScore* out = scores.data() + static_cast<size_t>(c0) * static_cast<size_t>(n_scored);
    parallel_for(n * n_scored, context.n_threads, [&](int idx) {
      const int k = idx / n_scored, i = idx % n_scored;
      const size_t row = out_row(k, i, s) * static_cast<size_t>(n_vocab);
      const engine::Token next = tokens[static_cast<size_t>(c0 + k) * static_cast<size_t>(s.n_ctx) +
                                        static_cast<size_t>(first + i + 1)];
      out[idx] = score_full(ref_rows + row, model_rows + row, n_vocab, next);
    });
    timings.score += since(t0);
    if (progress) progress(c0 + n, s.n_chunks);
  }
  return scores;
}

std::vector<PositionScore> compare_stored(const engine::LoadedModel& model, ReferenceReader& ref,
                                          const engine::ContextOptions& context, Timings& timings,
                                          double& rest_mass_mean, const Progress& progress) {
  const auto& h = ref.header();
  ChunkSettings s{h.n_ctx, h.n_chunks};
  double rest_sum = 0;
  const int group = chunks_per_batch(s);
  const auto o = chunk_context(context, s.n_ctx, group);
  auto model_ctx = model.new_context(o);
  const int n_vocab = model.n_vocab(), first = s.first(), n_scored = s.scored_per_chunk();
  const auto& tokens = ref.tokens();
  std::vector<PositionScore> scores(static_cast<size_t>(s.n_chunks) * static_cast<size_t>(n_scored));
  std::vector<CompactRow> rows(static_cast<size_t>(group) * static_cast<size_t>(n_scored));
  for (int c0 = 0; c0 < s.n_chunks; c0 += group) {
    const int n = std::min(group, s.n_chunks - c0);
    for (int r = 0; r < n * n_scored; ++r) {
      rows[static_cast<size_t>(r)] = ref.next();
      rest_sum += rows[static_cast<size_t>(r)].rest;
    }
    const auto chunks = chunks_at(model, tokens, c0, n, s.n_ctx);
    auto t0 = Clock::now();
    const float* model_rows = decode_or_refuse(*model_ctx, chunks, first, n);
    timings.decode_model += since(t0);
    t0 = Clock::now();
    PositionScore* out = scores.data() + static_cast<size_t>(c0) * static_cast<size_t>(n_scored);
    parallel_for(n * n_scored, context.n_threads, [&](int idx) {
      const int k = idx / n_scored, i = idx % n_scored;
      const engine::Token next = tokens[static_cast<size_t>(c0 + k) * static_cast<size_t>(s.n_ctx) +
                                        static_cast<size_t>(first + i + 1)];
      out[idx] = score_compact(rows[static_cast<size_t>(idx)],
                               model_rows + out_row(k, i, s) * static_cast<size_t>(n_vocab), n_vocab, next);
    });
    timings.score += since(t0);
    if (progress) progress(c0 + n, s.n_chunks);
  }
  rest_mass_mean = scores.empty() ? 0 : rest_sum / static_cast<double>(scores.size());
  return scores;
}

void save_reference(const engine::LoadedModel& ref, const std::vector<engine::Token>& tokens,
                    const ChunkSettings& s, const engine::ContextOptions& context, int top_k, int samples,
                    ReferenceWriter& writer, Timings& timings, const Progress& progress) {
  const int group = chunks_per_batch(s);
  const auto o = chunk_context(context, s.n_ctx, group);
  auto ctx = ref.new_context(o);
  const int n_vocab = ref.n_vocab(), first = s.first(), n_scored = s.scored_per_chunk();
  std::vector<CompactRow> rows(static_cast<size_t>(group) * static_cast<size_t>(n_scored));
  for (int c0 = 0; c0 < s.n_chunks; c0 += group) {
    const int n = std::min(group, s.n_chunks - c0);
    const auto chunks = chunks_at(ref, tokens, c0, n, s.n_ctx);
    auto t0 = Clock::now();
    const float* ref_rows = decode_or_refuse(*ctx, chunks, first, n);
    timings.decode_ref += since(t0);
    t0 = Clock::now();
    parallel_for(n * n_scored, context.n_threads, [&](int idx) {
      const int k = idx / n_scored, i = idx % n_scored;
      const engine::Token next = tokens[static_cast<size_t>(c0 + k) * static_cast<size_t>(s.n_ctx) +
                                        static_cast<size_t>(first + i + 1)];
      // Seeded by the position's index in the text: the same file from the same logits.
      const auto seed =
          static_cast<uint64_t>(c0) * static_cast<uint64_t>(n_scored) + static_cast<uint64_t>(idx);
      rows[static_cast<size_t>(idx)] = compact_row(ref_rows + out_row(k, i, s) * static_cast<size_t>(n_vocab),
                                                   n_vocab, top_k, next, samples, seed);
    });
    for (int r = 0; r < n * n_scored; ++r) writer.add(rows[static_cast<size_t>(r)]);
    timings.score += since(t0);
    if (progress) progress(c0 + n, s.n_chunks);
  }
}

CompactError measure_compact_error(const engine::LoadedModel& model, const engine::LoadedModel& ref,
                                   const std::vector<engine::Token>& tokens, const ChunkSettings& s,
                                   const engine::ContextOptions& context, int top_k) {
  const auto o = chunk_context(context, s.n_ctx, 1);
  auto model_ctx = model.new_context(o);
  auto ref_ctx = ref.new_context(o);
  const int n_vocab = model.n_vocab(), first = s.first(), n_scored = s.scored_per_chunk();
  std::vector<PositionScore> full, compact;
  for (int c = 0; c < s.n_chunks; ++c) {
    const auto chunk = chunks_at(model, tokens, c, 1, s.n_ctx);
    const float* ref_rows = decode_or_refuse(*ref_ctx, chunk, first);
    const float* model_rows = decode_or_refuse(*model_ctx, chunk, first);
    const engine::Token* text = tokens.data() + static_cast<size_t>(c) * static_cast<size_t>(s.n_ctx);
    for (int i = 0; i < n_scored; ++i) {
      const size_t row = static_cast<size_t>(i) * static_cast<size_t>(n_vocab);
      const engine::Token next = text[first + i + 1];
      full.push_back(score_full(ref_rows + row, model_rows + row, n_vocab, next));
      compact.push_back(
          score_compact(compact_row(ref_rows + row, n_vocab, top_k, next), model_rows + row, n_vocab, next));
    }
  }
  return {summarize(full), summarize(compact)};
}

std::string quantization_verdict(const Summary& model, const Summary& fresh) {
  const double gap = model.kld.value - fresh.kld.value;
  const double err = std::hypot(model.kld.err, fresh.kld.err);
  if (gap > 3 * err && model.kld.value > 1.25 * fresh.kld.value) return "further";
  if (-gap > 3 * err && fresh.kld.value > 1.25 * model.kld.value) return "closer";
  return "as_fresh";
}

}  // namespace edgeprobe::fidelity
