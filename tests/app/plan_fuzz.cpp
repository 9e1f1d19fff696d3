// libFuzzer target for the plan reader: whatever bytes a plan file holds, parsing and
// reading it gives a plan or throws edgeprobe::Error (bad input, exit 2), never a JSON
// type error (which would surface as an internal error, exit 1), a crash, or a read out
// of bounds (ASan/UBSan watch). Built from src/app/plan_json.cpp and core alone.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "app/plan.h"
#include "core/bounded_input.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edgeprobe;
  try {
    const auto j = parse_json_bounded(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz",
                                      "plan", app::kMaxPlanDepth);
    (void)app::plan_from_json(j);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kBadInput) __builtin_trap();  // bad bytes are bad input, nothing else
  }
  return 0;
}
