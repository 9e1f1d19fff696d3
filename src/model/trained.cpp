#include "model/trained.h"

#include <fcntl.h>
#include <ggml-backend.h>
#include <ggml-opt.h>
#include <llama.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/digest.h"
#include "core/error.h"
#include "core/subprocess.h"
#include "engine/backend.h"

namespace edgeprobe::model {

const char* const kKjvCorpusSha256 = "b5c4940bcfeee072c0935b5200d0f9d88a00a0199cb0961d16133458fcdfae5d";

namespace {
namespace fs = std::filesystem;

// Bump when the trainer's code changes what it makes (the recipe hash covers it).
constexpr int kTrainerVersion = 1;
// The held-out rule: chapters counted from Genesis 1 (= 0); those with index % 20 == 0 are
// held out (59 of 1,189 chapters, 5 % of the verses, spread over the whole book).
constexpr int kHeldOutEvery = 20;
// The tokenizer: SentencePiece BPE (what llama's own tokenizer.model is, and what llama.cpp's
// SPM tokenizer reproduces: merges by score), byte fallback, no normalisation, one thread
// (SentencePiece's trainer is deterministic with one). 4096 pieces: a multiple of 256 so the
// embedding and output matrices keep k-quants.
constexpr int kVocabSize = 4096;
const std::vector<std::string>& spm_settings() {
  static const std::vector<std::string> settings = {"--vocab_size=4096",
                                                    "--model_type=bpe",
                                                    "--byte_fallback=true",
                                                    "--split_digits=true",
                                                    "--normalization_rule_name=identity",
                                                    "--add_dummy_prefix=true",
                                                    "--remove_extra_whitespaces=false",
                                                    "--character_coverage=1.0",
                                                    "--num_threads=1",
                                                    "--random_seed=1",
                                                    "--bos_id=1",
                                                    "--eos_id=2",
                                                    "--unk_id=0",
                                                    "--pad_id=-1"};
  return settings;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

std::string corpus_dir() {
  return fmt::format("{}/trained-kjv-{}", default_model_cache_dir(),
                     std::string(kKjvCorpusSha256).substr(0, 12));
}
std::string tokenizer_prefix() {
  return fmt::format("{}/tokenizer-{}", corpus_dir(), sha256_hex(joined(spm_settings())).substr(0, 12));
}

void write_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = fmt::format("{}.{}.partial", path, static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary);
    out << bytes;
    if (!out.flush()) throw_environment("cannot write '{}' (disk full?)", tmp);
  }
  fs::rename(tmp, path);
}

// An exclusive flock on PATH.lock for the life of the object: a second process making the
// same file waits here, then finds it made.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open((path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) throw_environment("cannot open the lock file '{}.lock'", path);
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) throw_environment("cannot lock '{}.lock'", path);
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// Extracts every verse with Debian's `bible` program (bible-kjv), one a line without its
// number, checks the text against kKjvCorpusSha256, and splits it by chapter.
void prepare_corpus() {
  const std::string dir = corpus_dir();
  if (fs::exists(dir + "/train.txt") && fs::exists(dir + "/held_out.txt")) return;
  fs::create_directories(dir);
  FileLock lock(dir + "/corpus");
  if (fs::exists(dir + "/train.txt") && fs::exists(dir + "/held_out.txt")) return;
  SubprocessResult r;
  try {
    r = run_subprocess({"bible", "-l100000", "Gen1:1-Rev22:21"}, within(120));
  } catch (const Error&) {
    throw_environment(
        "the trained models' corpus needs Debian's bible-kjv and bible-kjv-text (apt-get install bible-kjv "
        "bible-kjv-text; scripts/setup.sh installs them)");
  }
  if (r.exit_code != 0 || r.out.empty())
    throw_environment("`bible` failed to print the KJV (exit {}): {}", r.exit_code, output_line(r.err));
  std::string all, train, held_out;
  int chapter = -1;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line[0] != ' ') {  // "Genesis 1", "1 Samuel 3": a chapter heading
      ++chapter;
      continue;
    }
    size_t p = line.find_first_not_of(' ');
    const size_t digits = line.find_first_not_of("0123456789", p);
    if (p == std::string::npos || digits == p || digits == std::string::npos || line[digits] != ' ') continue;
    const std::string verse = line.substr(digits + 1) + "\n";
    all += verse;
    (chapter % kHeldOutEvery == 0 ? held_out : train) += verse;
  }
  const std::string sha = sha256_hex(all);
  if (sha != kKjvCorpusSha256)
    throw_environment(
        "the KJV text from bible-kjv-text has SHA-256 {}, the trained models' recipe expects {} (another "
        "version of the package?)",
        sha, kKjvCorpusSha256);
  write_atomically(dir + "/train.txt", train);
  write_atomically(dir + "/held_out.txt", held_out);
}

// Trains the SentencePiece tokenizer on the training text (spm_train from Debian's
// sentencepiece) and reads its vocabulary as llama SPM metadata.
SpmVocabulary tokenizer() {
  prepare_corpus();
  const std::string prefix = tokenizer_prefix();
  if (!fs::exists(prefix + ".vocab")) {
    FileLock lock(prefix);
    if (!fs::exists(prefix + ".vocab")) {
      const std::string tmp = fmt::format("{}.{}.partial", prefix, static_cast<long>(getpid()));
      std::vector<std::string> argv = {"spm_train", "--input=" + corpus_dir() + "/train.txt",
                                       "--model_prefix=" + tmp};
      for (const auto& s : spm_settings()) argv.push_back(s);
      SubprocessResult r;
      try {
        r = run_subprocess(argv, within(600));
      } catch (const Error&) {
        throw_environment(
            "the trained models' tokenizer needs Debian's sentencepiece (apt-get install sentencepiece; "
            "scripts/setup.sh installs it)");
      }
      if (r.exit_code != 0)
        throw_environment("spm_train failed (exit {}): {}", r.exit_code, output_line(r.err));
      fs::rename(tmp + ".model", prefix + ".model");
      fs::rename(tmp + ".vocab", prefix + ".vocab");  // last: its presence means both are there
    }
  }
  SpmVocabulary v;
  std::ifstream in(prefix + ".vocab");
  for (std::string line; std::getline(in, line);) {
    const size_t tab = line.rfind('\t');
    if (tab == std::string::npos) throw_environment("malformed tokenizer vocabulary '{}.vocab'", prefix);
    std::string piece = line.substr(0, tab);
    const float score = std::stof(line.substr(tab + 1));
    int32_t type = 1;
    if (piece == "<unk>")
      type = 2;
    else if (piece == "<s>" || piece == "</s>")
      type = 3;
    else if (piece.size() == 6 && piece.starts_with("<0x") && piece.back() == '>')
      type = 6;
    v.tokens.push_back(std::move(piece));
    v.scores.push_back(score);
    v.types.push_back(type);
  }
  if (v.tokens.size() != kVocabSize || v.tokens[0] != "<unk>" || v.tokens[1] != "<s>" ||
      v.tokens[2] != "</s>")
    throw_environment("tokenizer vocabulary '{}.vocab' has {} pieces, expected {} starting <unk> <s> </s>",
                      prefix, v.tokens.size(), kVocabSize);
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

std::string base_path(const TrainedRecipe& r) {
  return fmt::format("{}/trained-{}-{}", default_model_cache_dir(), r.name, recipe_hash(r));
}
std::string model_path(const TrainedRecipe& r, const std::string& quant) {
  return fmt::format("{}-{}.gguf", base_path(r), quant);
}

// The SHA-256 recorded beside a cached file when it was written.
void record_sha(const std::string& path) { write_atomically(path + ".sha256", sha256_file(path) + "\n"); }
bool sha_matches(const std::string& path) {
  std::ifstream in(path + ".sha256");
  std::string recorded;
  if (!(in >> recorded)) return false;
  return recorded == sha256_file(path);
}

// llama_opt_epoch's callbacks carry no user pointer: one training at a time per process.
std::mutex g_train_mutex;
struct TrainState {
  const TrainedRecipe* recipe = nullptr;
  const TrainOptions* options = nullptr;
  int64_t step = 0;  // optimizer steps asked for so far (get_opt_pars calls)
  double last_report_s = -1e9;
  double start_s = 0;
  double last_loss = 0;  // the running mean and its count at the last report: the loss since
  int64_t last_batch = 0;
};
TrainState* g_state = nullptr;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

ggml_opt_optimizer_params schedule(void* userdata) {
  auto* st = static_cast<TrainState*>(userdata);
  const TrainedRecipe& r = *st->recipe;
  const int64_t i = st->step++;
  float lr;
  if (i < r.warmup_steps) {
    lr = r.lr_max * static_cast<float>(i + 1) / static_cast<float>(r.warmup_steps);
  } else {
    const double t = std::min(1.0, static_cast<double>(i - r.warmup_steps) /
                                       static_cast<double>(std::max<int64_t>(1, r.steps - r.warmup_steps)));
    lr = r.lr_min + static_cast<float>(0.5 * (1 + std::cos(M_PI * t))) * (r.lr_max - r.lr_min);
  }
  ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(nullptr);
  p.adamw.alpha = lr;
  p.adamw.beta1 = 0.9f;
  p.adamw.beta2 = 0.99f;
  p.adamw.eps = 1e-8f;
  p.adamw.wd = r.weight_decay;
  return p;
}

void on_batch(bool train, ggml_opt_context_t, ggml_opt_dataset_t, ggml_opt_result_t result, int64_t ibatch,
              int64_t ibatch_max, int64_t) {
  TrainState* st = g_state;
  if (!st || !st->options->progress) return;
  const double t = now_s();
  if (ibatch != ibatch_max && t - st->last_report_s < 10) return;
  st->last_report_s = t;
  double loss = 0, unc = 0;
  ggml_opt_result_loss(result, &loss, &unc);
  const double elapsed = t - st->start_s;
  if (train) {
    // ggml's result is the mean since the start: the mean since the last report is what moves.
    const double recent =
        ibatch > st->last_batch
            ? (loss * static_cast<double>(ibatch) - st->last_loss * static_cast<double>(st->last_batch)) /
                  static_cast<double>(ibatch - st->last_batch)
            : loss;
    st->last_loss = loss;
    st->last_batch = ibatch;
    loss = recent;
    const double left = elapsed / static_cast<double>(ibatch) * static_cast<double>(ibatch_max - ibatch);
    st->options->progress(fmt::format(
        "trained:{}: step {}/{}, training loss {:.3f}, {:.0f} tokens/s, {:.0f}s elapsed, ~{:.0f}s left",
        st->recipe->name, ibatch, ibatch_max, loss, static_cast<double>(ibatch * st->recipe->n_ctx) / elapsed,
        elapsed, left));
  } else if (ibatch == ibatch_max) {
    st->options->progress(
        fmt::format("trained:{}: held-out loss {:.3f} (perplexity {:.1f} over whole windows)",
                    st->recipe->name, loss, std::exp(loss)));
  }
}

// Windows of n_ctx + 1 tokens (input and next-token labels). Training: `steps` windows, epoch
// after epoch over the training tokens, each epoch from its own offset in a shuffled order
// (seeded); then every held-out window, evaluated only.
struct Windows {
  std::vector<int64_t> starts_train;
  std::vector<int64_t> starts_held_out;
};

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<llama_token> tokenize(const llama_vocab* vocab, const std::string& text) {
  std::vector<llama_token> tokens(text.size() + 2);
  int n = llama_tokenize(vocab, text.c_str(), static_cast<int32_t>(text.size()), tokens.data(),
                         static_cast<int32_t>(tokens.size()), /*add_special=*/true, /*parse_special=*/false);
  if (n < 0) throw_environment("tokenizing the corpus failed ({} tokens needed)", -n);
  tokens.resize(static_cast<size_t>(n));
  return tokens;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void train(const TrainedRecipe& r, const TrainOptions& options, const std::string& out_path) {
  const SpmVocabulary vocab = tokenizer();
  engine::load_cpu_backend();
  const auto report = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  const double t0 = now_s();
  // A training killed before its end leaves its .partial files; we hold the lock, so no
  // other process is writing these.
  for (const auto& e : fs::directory_iterator(default_model_cache_dir())) {
    const std::string f = e.path().string();
    if (f.starts_with(base_path(r) + "-") || f.starts_with(base_path(r) + ".init."))
      if (f.ends_with(".partial")) fs::remove(e.path());
  }
  const std::string init_path = fmt::format("{}.init.{}.partial", base_path(r), static_cast<long>(getpid()));
  const std::string tmp_path = fmt::format("{}.{}.partial", out_path, static_cast<long>(getpid()));
  struct Remove {
    std::vector<std::string> paths;
    ~Remove() {
      std::error_code ec;
      for (const auto& p : paths) fs::remove(p, ec);
    }
  } cleanup{{init_path, tmp_path}};
  SynthShape shape = r.shape;
  shape.name = r.name;
  write_initial_model(shape, vocab, r.seed, "edgeprobe-trained-" + r.name, init_path);

  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  static ggml_backend_dev_t no_devices[] = {nullptr};
  mp.devices = no_devices;  // the CPU only: training on a GPU backend here is not what the recipe measured
  mp.load_mode = LLAMA_LOAD_MODE_NONE;  // read into memory: the weights are written to
  std::unique_ptr<llama_model, decltype(&llama_model_free)> model(
      llama_model_load_from_file(init_path.c_str(), mp), &llama_model_free);
  if (!model) throw_environment("llama.cpp could not load the initial model '{}'", init_path);
  const int n_threads = options.n_threads > 0
                            ? options.n_threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(r.n_ctx);
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(r.n_ctx);
  cp.n_seq_max = 1;
  cp.n_threads = cp.n_threads_batch = n_threads;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.op_offload = false;
  cp.no_perf = true;
  std::unique_ptr<llama_context, decltype(&llama_free)> ctx(llama_init_from_model(model.get(), cp),
                                                            &llama_free);
  if (!ctx) throw_environment("llama.cpp could not make a training context");

  const llama_vocab* lv = llama_model_get_vocab(model.get());
  const std::vector<llama_token> train_tokens = tokenize(lv, read_text(corpus_dir() + "/train.txt"));
  const std::vector<llama_token> held_tokens = tokenize(lv, read_text(corpus_dir() + "/held_out.txt"));
  const int64_t n = r.n_ctx;
  Windows w;
  uint64_t rng = r.seed ^ 0xda7a5e7ULL;
  while (static_cast<int64_t>(w.starts_train.size()) < r.steps) {
    const int64_t offset = static_cast<int64_t>(splitmix(rng) % static_cast<uint64_t>(n));
    std::vector<int64_t> epoch;
    for (int64_t s = offset; s + n + 1 <= static_cast<int64_t>(train_tokens.size()); s += n)
      epoch.push_back(s);
    for (size_t i = epoch.size(); i > 1; --i)
      std::swap(epoch[i - 1], epoch[splitmix(rng) % i]);  // Fisher-Yates
    for (int64_t s : epoch)
      if (static_cast<int64_t>(w.starts_train.size()) < r.steps) w.starts_train.push_back(s);
  }
  for (int64_t s = 0; s + n + 1 <= static_cast<int64_t>(held_tokens.size()); s += n)
    w.starts_held_out.push_back(s);
  const int64_t n_train = static_cast<int64_t>(w.starts_train.size());
  const int64_t ndata = n_train + static_cast<int64_t>(w.starts_held_out.size());
  ggml_opt_dataset_t dataset =
      ggml_opt_dataset_init(GGML_TYPE_I32, GGML_TYPE_I32, n, n, ndata, /*ndata_shard=*/1);
  struct FreeDataset {
    ggml_opt_dataset_t d;
    ~FreeDataset() { ggml_opt_dataset_free(d); }
  } free_dataset{dataset};
  auto* data = static_cast<llama_token*>(ggml_opt_dataset_data(dataset)->data);
  auto* labels = static_cast<llama_token*>(ggml_opt_dataset_labels(dataset)->data);
  for (int64_t i = 0; i < ndata; ++i) {
    const bool held = i >= n_train;
    const auto& tokens = held ? held_tokens : train_tokens;
    const int64_t s =
        held ? w.starts_held_out[static_cast<size_t>(i - n_train)] : w.starts_train[static_cast<size_t>(i)];
    std::copy_n(tokens.begin() + s, n, data + i * n);
    std::copy_n(tokens.begin() + s + 1, n, labels + i * n);
  }
  report(fmt::format(
      "trained:{}: {} training tokens, {} held-out; {} steps of {} tokens ({:.2f} epochs), {} threads",
      r.name, train_tokens.size(), held_tokens.size(), r.steps, n,
      static_cast<double>(r.steps * n) / static_cast<double>(train_tokens.size()), n_threads));

  std::lock_guard guard(g_train_mutex);
  TrainState st{&r, &options, 0, -1e9, now_s(), 0, 0};
  g_state = &st;
  struct ClearState {
    ~ClearState() { g_state = nullptr; }
  } clear_state;
  llama_opt_params op{};
  op.n_ctx_train = 0;
  op.param_filter = llama_opt_param_filter_all;
  op.param_filter_ud = nullptr;
  op.get_opt_pars = schedule;
  op.get_opt_pars_ud = &st;
  op.optimizer_type = GGML_OPT_OPTIMIZER_TYPE_ADAMW;
  llama_opt_init(ctx.get(), model.get(), op);
  ggml_opt_result_t result_train = ggml_opt_result_init();
  ggml_opt_result_t result_eval = ggml_opt_result_init();
  llama_opt_epoch(ctx.get(), dataset, result_train, result_eval, n_train, on_batch, on_batch);
  double train_loss = 0, held_loss = 0, unc = 0;
  ggml_opt_result_loss(result_train, &train_loss, &unc);
  ggml_opt_result_loss(result_eval, &held_loss, &unc);
  ggml_opt_result_free(result_train);
  ggml_opt_result_free(result_eval);
  const double train_s = now_s() - st.start_s;

  llama_model_save_to_file(model.get(), tmp_path.c_str());
  if (!fs::exists(tmp_path)) throw_environment("llama.cpp did not write the trained model '{}'", tmp_path);
  fs::rename(tmp_path, out_path);
  record_sha(out_path);
  nlohmann::json j = {{"name", r.name},
                      {"recipe_hash", recipe_hash(r)},
                      {"trainer_version", kTrainerVersion},
                      {"corpus_sha256", kKjvCorpusSha256},
                      {"tokenizer_sha256", sha256_file(tokenizer_prefix() + ".model")},
                      {"steps", r.steps},
                      {"n_ctx", r.n_ctx},
                      {"threads", n_threads},
                      {"train_tokens", train_tokens.size()},
                      {"held_out_tokens", held_tokens.size()},
                      {"mean_training_loss", train_loss},
                      {"held_out_loss_whole_windows", held_loss},
                      {"training_seconds", train_s},
                      {"total_seconds", now_s() - t0}};
  write_atomically(base_path(r) + ".json", j.dump(2) + "\n");
  report(fmt::format("trained:{}: done in {:.0f}s ({:.0f} tokens/s); held-out perplexity {:.1f}; {}", r.name,
                     train_s, static_cast<double>(r.steps * n) / train_s, std::exp(held_loss), out_path));
}

}  // namespace

std::vector<TrainedRecipe> trained_recipes() {
  // {arch, n_vocab, n_ctx_train, n_embd, n_layer, n_ff, n_head, n_head_kv}: every matrix
  // dimension (n_embd, n_ff, n_vocab) a multiple of 256, so llama-quantize keeps k-quants.
  // AdamW at lr 1e-4 (cosine to 1e-5): at 8e-4 and 1e-3 the loss fell to about 6.8, then
  // climbed past the uniform ln(4096) = 8.3 (ggml-opt has no gradient clipping, and one
  // 256-token sequence a step is a noisy batch); at 3e-4 it sat near 6.8 until the schedule
  // brought the rate down (draft: held-out PPL 317); 1e-4 gave 226 for the same steps.
  // Steps: what about 10 minutes of 2 shared cores allow for both (docs/models.md).
  TrainedRecipe main_r{
      "main", {{"llama", kVocabSize, 256, 256, 4, 768, 4, 4}, "main"}, 256, 1800, 100, 1e-4f, 1e-5f, 0.01f,
      1};
  TrainedRecipe draft_r{
      "draft", {{"llama", kVocabSize, 256, 256, 2, 512, 4, 4}, "draft"}, 256, 1200, 100, 1e-4f, 1e-5f, 0.01f,
      2};
  return {main_r, draft_r};
}

const TrainedRecipe& trained_recipe(const std::string& name) {
  static const std::vector<TrainedRecipe> recipes = trained_recipes();
  std::string known;
  for (const auto& r : recipes) {
    if (r.name == name) return r;
    known += (known.empty() ? "" : ", ") + ("trained:" + r.name);
  }
  throw_bad_input("unknown trained model '{}'; known: {}", name, known);
}

std::string recipe_hash(const TrainedRecipe& r) {
  const auto& s = r.shape;
  const std::string key = fmt::format(
      "trainer={} corpus={} held_out_every={} tokenizer=[{}] shape={},{},{},{},{},{},{},{} n_ctx={} steps={} "
      "warmup={} "
      "lr={:a},{:a} wd={:a} seed={}",
      kTrainerVersion, kKjvCorpusSha256, kHeldOutEvery, joined(spm_settings()), s.architecture, s.n_vocab,
      s.n_ctx_train, s.n_embd, s.n_layer, s.n_ff, s.n_head, s.n_head_kv, r.n_ctx, r.steps, r.warmup_steps,
      r.lr_max, r.lr_min, r.weight_decay, r.seed);
  return sha256_hex(key).substr(0, 16);
}

std::optional<TrainedSpec> parse_trained_spec(const std::string& spec) {
  if (!spec.starts_with("trained:")) return std::nullopt;
  const std::string rest = spec.substr(8);
  const size_t colon = rest.find(':');
  TrainedSpec out{rest.substr(0, colon), colon == std::string::npos ? "f32" : rest.substr(colon + 1)};
  trained_recipe(out.name);  // throws listing the known names
  quant_ftype(out.quant);    // throws listing the known quantizations
  return out;
}

std::string trained_model(const std::string& name, const std::string& quant, const TrainOptions& options) {
  const TrainedRecipe& r = trained_recipe(name);
  const int ftype = quant_ftype(quant);
  fs::create_directories(default_model_cache_dir());
  const std::string f32 = model_path(r, "f32");
  {
    FileLock lock(base_path(r));
    if (fs::exists(f32) && !sha_matches(f32)) {
      if (!options.train_if_missing)
        throw_bad_input(
            "the cached trained:{} ('{}') does not match the SHA-256 recorded when it was made (corrupt); "
            "run "
            "`edgeprobe train {}` to make it again",
            name, f32, name);
      if (options.progress)
        options.progress(fmt::format("trained:{}: the cached file is corrupt; training it again", name));
      std::error_code ec;
      fs::remove(f32, ec);
    }
    if (!fs::exists(f32)) {
      if (!options.train_if_missing)
        throw_bad_input(
            "trained:{} is not made yet: run `edgeprobe train {}` (minutes, once; scripts/setup.sh does it)",
            name, name);
      if (options.progress)
        options.progress(
            fmt::format("trained:{} is not in {} yet: training it now, once ({} steps; minutes on a small "
                        "machine; scripts/setup.sh does this in set-up)",
                        name, default_model_cache_dir(), r.steps));
      train(r, options, f32);
    }
  }
  if (quant == "f32") return f32;
  const std::string out = model_path(r, quant);
  FileLock lock(out);
  if (fs::exists(out) && sha_matches(out)) return out;
  if (fs::exists(out) && options.progress)
    options.progress(fmt::format("trained:{}:{}: the cached file is corrupt; quantizing again", name, quant));
  const std::string tmp = fmt::format("{}.{}.partial", out, static_cast<long>(getpid()));
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.ftype = static_cast<llama_ftype>(ftype);
  qp.nthread = options.n_threads;
  if (llama_model_quantize(f32.c_str(), tmp.c_str(), &qp) != 0) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw_environment("llama.cpp failed to quantize trained:{} to {}", name, quant);
  }
  fs::rename(tmp, out);
  record_sha(out);
  return out;
}

std::string trained_model_path(const std::string& name, const std::string& quant) {
  quant_ftype(quant);
  return model_path(trained_recipe(name), quant);
}

std::string trained_held_out_text() {
  prepare_corpus();
  return corpus_dir() + "/held_out.txt";
}

std::string trained_training_text() {
  prepare_corpus();
  return corpus_dir() + "/train.txt";
}

}  // namespace edgeprobe::model
