#pragma once
#include <string>
#include <vector>

#include "app/job.h"
#include "app/plan.h"
#include "fidelity/fidelity.h"
#include "fidelity/frontier.h"

namespace edgeprobe::app {

// `edgeprobe frontier`: one model's quantizations, each measured for fidelity against the
// model's own full-precision file and for speed against it in interleaved rounds.
struct FrontierPlan {
  // trained:NAME, synth:SHAPE (their f32/f16 is the reference), or a GGUF file (itself the
  // reference; its quantizations are made on first use and cached).
  std::string model;
  std::vector<std::string> quants{"q8_0", "q6_k", "q4_k_m", "q3_k_m", "q2_k"};
  std::string text;  // "" = fidelity::default_text_path()
  fidelity::ChunkSettings chunks{512, 20};
  int n_threads = 0;  // 0 = the device's default
  int rounds = 5;     // speed rounds: each runs every quantization and the reference once
  int n_prompt = 128, n_gen = 64;
  Environment env;
};

// Throws Error: kBadInput for a bad plan or file (before anything is measured).
fidelity::Frontier run_frontier(const FrontierPlan& plan, const JobContext& context);

}  // namespace edgeprobe::app
