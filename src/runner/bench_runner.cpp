#include "runner/bench_runner.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "core/stop_token.h"
#include "probe/storage.h"
#include "runner/process_memory.h"
#include "runner/request_path.h"

namespace edgeprobe::runner {
namespace {

const result::ErrorInfo kInterrupted{"interrupted", "not run: the sweep was interrupted"};


std::vector<engine::Token> random_tokens(std::mt19937_64& rng, int n, int32_t n_vocab, engine::Token first) {
  std::uniform_int_distribution<engine::Token> dist(0, n_vocab - 1);
  std::vector<engine::Token> tokens(static_cast<size_t>(n));
  for (auto& t : tokens) t = dist(rng);
  if (first >= 0 && !tokens.empty()) tokens[0] = first;
  return tokens;
}

engine::ContextOptions context_options(const workload::TestCase& c) {
  engine::ContextOptions o;
  o.n_ctx = c.n_prompt + c.n_gen + c.n_depth;
  o.n_batch = c.n_batch;
  o.n_ubatch = c.n_ubatch;
  o.n_threads = c.n_threads;
  if (!c.cpu_mask.empty()) o.cpu_mask = engine::parse_cpu_mask(c.cpu_mask);
  o.cpu_strict = c.cpu_strict;
  o.poll = c.poll;
  o.flash_attn = c.flash_attn;
  o.type_k = c.type_k;
  o.type_v = c.type_v;
  o.op_offload = c.op_offload;
  return o;
}

engine::ModelOptions model_options(const workload::TestCase& c) {
  engine::ModelOptions o;
  o.path = c.model_path;
  o.use_mmap = c.use_mmap;
  o.n_gpu_layers = c.n_gpu_layers;
  o.devices = c.devices;
  o.split_mode = c.split_mode;
  o.main_gpu = c.main_gpu;
  return o;
}

// A setting the engine cannot honour is refused: a figure measured without it would be
// read as one measured with it.
void check_supported(const engine::Engine& engine, const workload::TestCase& c) {
  if (!engine.capabilities().cpu_placement && (!c.cpu_mask.empty() || c.cpu_strict))
    throw_bad_input("the {} engine cannot place threads on CPUs; drop -C/--cpu-mask and --cpu-strict", engine.name());
}

void emit(const RunnerCallbacks& callbacks, std::vector<PhaseEvent>& events, const PhaseEvent& e) {
  events.push_back(e);
  if (callbacks.event) callbacks.event(e);
}

// Runs one test once. What is timed: the prompt (one decode call, synchronous) and every
// decode step. The depth fill before it is not timed; with an engine that can snapshot
// its cache, it is made once and restored for the later runs.
class TestExecution {
 public:
  TestExecution(const engine::LoadedModel& model, engine::Context& ctx, bool kv_state, const workload::TestCase& test,
                const RunClock& clock, const RunnerCallbacks& callbacks, std::vector<PhaseEvent>& events)
      : model_(model), ctx_(ctx), kv_state_(kv_state), test_(test), clock_(clock), callbacks_(callbacks),
        events_(events) {}

  result::Repetition run(int repetition, uint64_t seed) {
    std::mt19937_64 rng(seed);
    ctx_.clear();
    if (test_.n_depth > 0) fill_depth(rng);
    const engine::Token first = model_.adds_bos() && test_.n_depth == 0 ? model_.bos_token() : -1;
    const auto prompt = random_tokens(rng, test_.n_prompt, model_.n_vocab(), first);
    const auto gen = random_tokens(rng, test_.n_gen, model_.n_vocab(), test_.n_prompt == 0 ? first : -1);

    result::Repetition rep;
    rep.index = repetition;
    reset_peak_rss();
    rep.start_ns = clock_.now_ns();
    if (!prompt.empty()) {
      const int64_t p0 = clock_.now_ns();
      ctx_.decode(prompt);
      const int64_t p1 = clock_.now_ns();
      rep.prefill_ms = ms_between(p0, p1);
      rep.prefill_tokens_per_s = test_.n_prompt / (rep.prefill_ms / 1e3);
      rep.ttft_ms = rep.prefill_ms;
      emit(callbacks_, events_, {"prefill", "phase", p0, p1, test_.n_prompt, repetition, test_.name()});
    }
    if (!gen.empty()) time_generation(gen, !prompt.empty(), repetition, rep);
    rep.end_ns = clock_.now_ns();
    rep.peak_rss_bytes = peak_rss_bytes();
    return rep;
  }

 private:
  void time_generation(const std::vector<engine::Token>& gen, bool after_prompt, int repetition,
                       result::Repetition& rep) {
    rep.decode_step_ms.reserve(gen.size());
    const int64_t d0 = clock_.now_ns();
    int64_t step_start = d0;
    for (engine::Token token : gen) {
      ctx_.decode_one(token);
      const int64_t step_end = clock_.now_ns();
      rep.decode_step_ms.push_back(ms_between(step_start, step_end));
      step_start = step_end;
    }
    const int64_t d1 = step_start;
    emit(callbacks_, events_, {"decode", "phase", d0, d1, test_.n_gen, repetition, test_.name()});
    if (callbacks_.event) {
      int64_t t = d0;
      for (double ms : rep.decode_step_ms) {
        const auto end = t + static_cast<int64_t>(ms * 1e6);
        emit(callbacks_, events_, {"token", "token", t, end, 1, repetition, test_.name()});
        t = end;
      }
    }
    // With a prompt, the first generated token comes from the prefill's logits, so every
    // decode step yields a later token. Without one, the first step yields the first
    // token: it is the time to first token and is left out of the decode rate.
    const size_t skip = after_prompt ? 0 : 1;
    if (!after_prompt) rep.ttft_ms = rep.decode_step_ms.front();
    double decode_ms = 0;
    for (size_t i = skip; i < rep.decode_step_ms.size(); ++i) decode_ms += rep.decode_step_ms[i];
    const size_t counted = rep.decode_step_ms.size() - skip;
    rep.decode_ms = decode_ms;
    rep.decode_tokens_per_s = counted > 0 && decode_ms > 0 ? static_cast<double>(counted) / (decode_ms / 1e3) : 0;
  }

  void fill_depth(std::mt19937_64& rng) {
    if (!depth_state_.empty() && ctx_.restore_state(depth_state_)) return;
    const engine::Token first = model_.adds_bos() ? model_.bos_token() : -1;
    ctx_.decode(random_tokens(rng, test_.n_depth, model_.n_vocab(), first));
    if (kv_state_) depth_state_ = ctx_.save_state();
  }

  const engine::LoadedModel& model_;
  engine::Context& ctx_;
  const bool kv_state_;
  const workload::TestCase& test_;
  const RunClock& clock_;
  const RunnerCallbacks& callbacks_;
  std::vector<PhaseEvent>& events_;
  std::vector<uint8_t> depth_state_;
};

// The model of a group of cases, loaded `repetitions` times: the first load is cold
// (first in this process), the others warm; the last one stays for the tests.
struct LoadedGroup {
  std::unique_ptr<engine::LoadedModel> model;
  std::unique_ptr<engine::LoadedModel> draft;  // --draft, loaded once after the target, not timed
  std::vector<double> load_ms;
  double resident_share = -1;  // of the file, before the first load
  std::optional<result::ErrorInfo> error;
};

LoadedGroup load_group(engine::Engine& engine, const workload::TestCase& test, const RunnerOptions& options,
                       const RunClock& clock, const RunnerCallbacks& callbacks, std::vector<PhaseEvent>& events) {
  LoadedGroup g;
  // Share of the file already in the page cache: tells a cold load from a warm one.
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(test.model_path, ec);
  g.resident_share = ec ? -1 : probe::resident_fraction(test.model_path, bytes);
  // Behind a server, "loading" makes a handle: the model loaded when the server started,
  // and no load time is known (absent, never the handle's microseconds).
  const bool in_process = engine.capabilities().in_process;
  try {
    const int loads = in_process ? std::max(1, options.repetitions) : 1;
    for (int l = 0; l < loads && !callbacks.stop.stop_requested(); ++l) {
      if (callbacks.progress) callbacks.progress(fmt::format("loading {} ({}/{})", test.model_path, l + 1, loads));
      g.model.reset();
      const int64_t t0 = clock.now_ns();
      g.model = engine.load(model_options(test));
      const int64_t t1 = clock.now_ns();
      if (!in_process) continue;
      g.load_ms.push_back(ms_between(t0, t1));
      emit(callbacks, events, {"load", "phase", t0, t1, 0, l, "load"});
    }
    if (options.spec.enabled() && g.model && !callbacks.stop.stop_requested()) {
      if (callbacks.progress) callbacks.progress(fmt::format("loading the draft {}", options.spec.draft));
      auto mo = model_options(test);
      mo.path = options.spec.draft;
      g.draft = engine.load(mo);
    }
  } catch (const std::exception& e) {
    g.model.reset();
    g.error = to_error_info(e);
  }
  return g;
}

// Every repetition of case `i` an interrupted run stored, in order.
std::vector<result::Repetition> stored_repetitions(size_t i, const RunnerOptions& options,
                                                   const RunnerCallbacks& callbacks) {
  std::vector<result::Repetition> stored;
  for (int r = 0; callbacks.stored_repetition && r < options.repetitions; ++r)
    if (auto rep = callbacks.stored_repetition(i, r)) stored.push_back(std::move(*rep));
  return stored;
}

bool uses_requests(const engine::Engine& engine, const RunnerOptions& options) {
  return !engine.capabilities().token_level || !options.api.empty();
}

// The greedy continuation of kVerifyPrompt in a context of its own with the test's
// settings (threads, batch, KV types, flash attention: whatever may change the numbers).
result::GreedyCheck greedy_continuation(const engine::LoadedModel& model, const workload::TestCase& test,
                                        int n) {
  result::GreedyCheck check;
  check.prompt = model.tokenize(kVerifyPrompt, true);
  auto co = context_options(test);
  co.n_ctx = static_cast<int>(check.prompt.size()) + n + 1;
  co.n_batch = std::max(co.n_batch, static_cast<int>(check.prompt.size()));
  auto ctx = model.new_context(co);
  ctx->decode(check.prompt, true);
  for (int i = 0; i < n; ++i) {
    const engine::Token t = ctx->argmax_last();
    check.tokens.push_back(t);
    if (model.is_end_of_generation(t)) break;
    ctx->decode_one(t);
  }
  return check;
}

// --draft: plain and speculative decoding in pairs, in contexts of their own with the
// test's settings, after the timed ones are gone (their caches are not held twice).
result::Speculative speculative_pairs(const engine::Engine& engine, const engine::LoadedModel& model,
                                      const engine::LoadedModel& draft, const workload::TestCase& test,
                                      const RunnerOptions& options, const RunClock& clock,
                                      const StopToken& stop) {
  if (!engine.capabilities().speculative)
    throw_bad_input("the {} engine cannot verify a draft in one batch; drop --draft", engine.name());
  std::vector<std::vector<engine::Token>> prompts;
  size_t longest = 0;
  for (const char* text : kSpecPrompts) {
    prompts.push_back(model.tokenize(text, true));
    longest = std::max(longest, prompts.back().size());
  }
  auto co = context_options(test);
  co.n_ctx = static_cast<int>(longest) + test.n_gen + options.spec.draft_max + 2;
  co.n_batch = std::max({co.n_batch, static_cast<int>(longest), options.spec.draft_max + 1});
  auto target_ctx = model.new_context(co);
  auto draft_ctx = draft.new_context(co);
  return measure_speculative(*target_ctx, *draft_ctx, prompts, test.n_gen, options.spec, options.repetitions,
                             options.warmup, clock, stop);
}

// One case on a loaded model: the warm-up, then the timed repetitions (stored ones are
// reused), each handed to callbacks.repetition as soon as it is done. Throws on failure.
void run_case(engine::Engine& engine, const engine::LoadedModel& model, const engine::LoadedModel* draft,
              size_t i, const workload::TestCase& test, const std::string& label,
              const RunnerOptions& options, const RunClock& clock, const RunnerCallbacks& callbacks,
              std::vector<PhaseEvent>& events, result::TestResult& res) {
  auto progress = [&](const std::string& s) {
    if (callbacks.progress) callbacks.progress(s);
  };
  check_supported(engine, test);
  const bool kv_state = engine.capabilities().kv_state;
  const bool requests = uses_requests(engine, options);
  res.placement = model.placement();
  if (!requests && !res.placement.devices.empty()) {
    // A GPU is in play: which backend runs each node, from an untimed pass of its own,
    // before the timed context exists (its buffers would otherwise be held twice).
    progress(label + ": placement probe");
    if (auto probed = model.probe_placement(context_options(test), test.n_prompt)) res.placement = std::move(*probed);
  }
  std::unique_ptr<engine::Context> ctx;
  std::unique_ptr<engine::Completer> completer;
  if (requests) {
    auto co = context_options(test);
    co.n_ctx = std::max(1, test.n_prompt) + std::max(1, test.n_gen);  // a request has a prompt and a token
    completer = model.new_completer(co);
  } else {
    ctx = model.new_context(context_options(test));
  }
  if (options.delay_s > 0) {
    progress(label + ": cooling down");
    std::this_thread::sleep_for(std::chrono::duration<double>(options.delay_s));
  }
  const RunnerCallbacks none;  // a named object: TestExecution keeps a reference to it
  std::vector<PhaseEvent> discard;
  std::optional<TestExecution> warm, exec;
  if (!requests) {
    warm.emplace(model, *ctx, kv_state, test, clock, none, discard);
    exec.emplace(model, *ctx, kv_state, test, clock, callbacks, events);
  }
  auto run_once = [&](int r, uint64_t seed) {
    if (!requests) return (r < 0 ? *warm : *exec).run(r, seed);
    std::function<void(const PhaseEvent&)> on_event;
    if (r >= 0) on_event = [&](const PhaseEvent& e) { emit(callbacks, events, e); };
    return run_request_repetition(*completer, model, test, options.api, r, seed, clock, on_event,
                                  engine.capabilities().in_process);
  };
  if (options.warmup) {
    progress(label + ": warm-up");
    run_once(-1, options.seed ^ 0xabcdefULL);
  }
  for (int r = 0; r < options.repetitions && !callbacks.stop.stop_requested(); ++r) {
    if (callbacks.stored_repetition) {
      if (auto stored = callbacks.stored_repetition(i, r)) {
        res.repetitions.push_back(std::move(*stored));
        continue;
      }
    }
    progress(fmt::format("{}: repetition {}/{}", label, r + 1, options.repetitions));
    res.repetitions.push_back(run_once(r, options.seed + static_cast<uint64_t>(r)));
    if (callbacks.repetition) callbacks.repetition(i, test, res.repetitions.back());
  }
  if (res.repetitions.empty()) res.error = result::ErrorInfo{"interrupted", "interrupted before any repetition"};
  if (options.verify_tokens > 0 && !requests && !callbacks.stop.stop_requested() &&
      !res.repetitions.empty()) {
    exec.reset();  // the timed context goes first: its KV cache is not held twice
    warm.reset();
    ctx.reset();
    progress(label + ": verify");
    res.verify = greedy_continuation(model, test, options.verify_tokens);
  }
  if (draft && test.n_gen > 0 && !requests && !callbacks.stop.stop_requested() && !res.repetitions.empty()) {
    exec.reset();
    warm.reset();
    ctx.reset();
    progress(fmt::format("{}: {} pairs of plain and speculative decoding", label, options.repetitions));
    res.speculative = speculative_pairs(engine, model, *draft, test, options, clock, callbacks.stop);
  }
  if (!options.load.enabled() || callbacks.stop.stop_requested()) return;
  auto co = context_options(test);
  co.n_ctx = std::max(1, test.n_prompt) + std::max(1, test.n_gen);
  std::vector<int> levels = options.load.concurrency;
  if (options.load.request_rate > 0) levels.push_back(0);  // 0: the open loop
  res.serving.emplace();
  for (int c : levels) {
    if (callbacks.stop.stop_requested()) break;
    progress(c > 0 ? fmt::format("{}: {} requests at concurrency {}", label, options.load.num_requests, c)
                   : fmt::format("{}: {} requests at {}/s", label, options.load.num_requests, options.load.request_rate));
    res.serving->push_back(run_load_level(model, co, test, options.api, options.load, c, options.seed, clock, callbacks.stop));
  }
}

}  // namespace

result::ErrorInfo to_error_info(const std::exception& e) {
  if (const auto* err = dynamic_cast<const Error*>(&e)) return {error_kind_name(err->kind()), err->what()};
  return {"bug", e.what()};
}

std::vector<result::TestResult> run_test_cases(engine::Engine& engine, const std::vector<workload::TestCase>& cases,
                                          const RunnerOptions& options, const RunClock& clock,
                                          const std::function<int(const std::string&)>& model_index,
                                          const RunnerCallbacks& callbacks) {
  std::vector<result::TestResult> results;
  LoadedGroup group;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& test = cases[i];
    result::TestResult res;
    res.config = test;
    res.model_index = model_index(test.model_path);
    std::vector<PhaseEvent> events;

    if (callbacks.stop.stop_requested()) {
      res.error = kInterrupted;
    } else {
      if (i == 0 || !test.same_model(cases[i - 1])) {
        group = {};  // the previous model is freed before the next one loads
        group = load_group(engine, test, options, clock, callbacks, events);
      }
      res.load_ms = group.load_ms;
      res.page_cache_resident_share = group.resident_share;
      if (group.error) {
        res.error = group.error;
      } else if (!group.model) {
        res.error = kInterrupted;
      } else if (auto stored = stored_repetitions(i, options, callbacks);
                 static_cast<int>(stored.size()) == options.repetitions) {
        res.repetitions = std::move(stored);  // a case an interrupted run finished, whole
      } else {
        try {
          const std::string label = fmt::format("test {}/{} {}", i + 1, cases.size(), test.name());
          run_case(engine, *group.model, group.draft.get(), i, test, label, options, clock, callbacks, events,
                   res);
        } catch (const std::exception& e) {
          // Stopped at once: the repetition in flight is dropped, not an error; the
          // finished ones stay.
          if (!process_stop_now_requested()) res.error = to_error_info(e);
          else if (res.repetitions.empty()) res.error = kInterrupted;
        }
      }
    }
    if (callbacks.enrich) callbacks.enrich(res, events);
    if (callbacks.result) callbacks.result(res);
    results.push_back(std::move(res));
  }
  return results;
}

}  // namespace edgeprobe::runner
