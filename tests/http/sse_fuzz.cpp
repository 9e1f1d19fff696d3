// libFuzzer target for the SSE parser: whatever bytes a server streams, cut wherever the
// first byte says, the parser hands over events and holds at most its bound for the one
// in progress (an event line without end, data lines never dispatched), and never crashes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/sse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kBound = 1024;  // small, so the fuzzer reaches it
  size_t events = 0;
  edgeprobe::http::SseParser parser(
      [&](const edgeprobe::http::SseEvent& e) {
        ++events;
        if (e.data.size() > kBound + 1) __builtin_trap();
      },
      kBound);
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t piece = size > 0 ? 1 + data[0] % 64 : 1;
  for (size_t i = 0; i < all.size(); i += piece) {
    const bool ok = parser.feed(all.substr(i, piece));
    if (parser.pending_bytes() > kBound + 1) __builtin_trap();
    if (!ok && !parser.overflowed()) __builtin_trap();
  }
  parser.finish();
  if (events > size) __builtin_trap();  // an event takes at least one byte (its blank line)
  return 0;
}
