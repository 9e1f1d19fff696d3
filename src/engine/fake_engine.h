#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/engine.h"

namespace edgeprobe::engine {

// A scripted engine: it computes nothing, but takes the time it is told to (it really
// waits, so a runner's own clock measures it), answers with a fixed greedy reply, keeps
// a real token cache with a real size limit, and fails where it is told to. It lets every
// path of the runners run in tests without a model file.
//
// Tokenizer: one token per byte (token = byte value); two special tokens follow.
struct FakeScript {
  static constexpr Token kBos = 256;
  static constexpr Token kEndOfGeneration = 257;
  static constexpr int32_t kVocab = 258;

  double prefill_ms_per_token = 0.01;  // a decode() of n tokens waits n times this
  double decode_ms_per_step = 0.05;    // every decode_one() waits this
  int32_t n_ctx_train = 4096;          // what a context asked for n_ctx 0 gets
  // The greedy output after a prefill, byte by byte, repeated as needed; the pick after
  // `eog_after` of them is end-of-generation (-1: never, generation runs to its limit).
  std::string reply = "fake reply ";
  int eog_after = -1;

  bool kv_state = true;
  bool context_shift = true;
  bool cpu_placement = true;

  // Scripted failures. Calls are counted over the engine's life, from 1; 0 = never.
  struct Failure {
    ErrorKind kind = ErrorKind::kBadInput;
    std::string message;
  };
  std::map<std::string, Failure> fail_load;  // model path -> why it does not load
  int fail_context_at = 0;  // the k-th new_context() throws
  int fail_prefill_at = 0;  // the k-th decode() throws, before it waits
  int fail_step_at = 0;     // the k-th decode_one() throws, before it waits
};

// What the runners asked of the engine, for tests to check.
struct FakeCounters {
  int loads = 0;
  int contexts = 0;
  int prefills = 0;
  int decode_steps = 0;
  int saves = 0;
  int restores = 0;
  std::vector<int> prefill_sizes;      // tokens of every decode() call, in order
  ContextOptions last_context_options;
};

class FakeEngine : public Engine {
 public:
  explicit FakeEngine(FakeScript script = {});
  std::string name() const override { return "fake"; }
  Capabilities capabilities() const override;
  nlohmann::json provenance() const override;
  std::unique_ptr<LoadedModel> load(const ModelOptions& options) override;

  const FakeCounters& counters() const;

  struct State;  // shared with the models and contexts it made

 private:
  std::shared_ptr<State> state_;
};

}  // namespace edgeprobe::engine
