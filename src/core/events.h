#pragma once
#include <cstdint>
#include <string>

namespace edgeprobe {

// A span on the run clock (RunClock, ns since the run started): a load, a prefill, one
// decode step. Telemetry samples carry the same clock, so the two line up in a trace.
struct PhaseEvent {
  std::string name;      // "load", "prefill", "decode", "token"
  std::string category;  // "phase" or "token"
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t tokens = 0;    // tokens processed in this span
  int repetition = -1;   // -1 for warm-up or not in a repetition
  std::string test;      // "pp512", "tg128", ...
};

}  // namespace edgeprobe
