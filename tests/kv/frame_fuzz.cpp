// libFuzzer target for the KV frame parser: whatever bytes a peer sends, the parser
// returns frames or throws edgeprobe::Error, within small bounds, and never crashes,
// reads out of bounds or allocates beyond its limits (ASan/UBSan watch).
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "kv/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edgeprobe::kv;
  Limits limits;
  limits.max_control_bytes = 4096;
  limits.max_state_bytes = 1 << 16;
  FrameParser parser(limits);
  // Fed in two pieces split where the first byte says, as a socket might deliver them.
  const size_t split = size > 0 ? data[0] % (size + 1) : 0;
  try {
    parser.feed(data, split);
    while (auto f = parser.next()) {
      if (f->type != FrameType::kState) (void)f->json();
    }
    parser.feed(data + split, size - split);
    while (auto f = parser.next()) {
      if (f->type != FrameType::kState) (void)f->json();
    }
  } catch (const edgeprobe::Error&) {
    // a refused frame: what a hostile peer gets
  }
  return 0;
}
