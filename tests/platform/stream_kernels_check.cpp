// A standalone check of the bandwidth probe's kernels, for targets where GoogleTest is not
// built (the Arm cross-check under qemu, tests/platform/stream_kernels_arm.sh): every kernel
// this CPU runs must sum like a plain loop and copy exactly. Prints one line per kernel;
// exits 1 on the first wrong result. Correctness only: no timing under emulation.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "probe/bandwidth_kernels.h"

using edgeprobe::probe::kStreamAlignBytes;
using edgeprobe::probe::kStreamBlockBytes;

int main() {
  const size_t words_per_block = kStreamBlockBytes / sizeof(uint64_t);
  const size_t n = 1031 * words_per_block;
  auto* src = static_cast<uint64_t*>(std::aligned_alloc(kStreamAlignBytes, (n + words_per_block) * sizeof(uint64_t)));
  auto* dst = static_cast<uint64_t*>(std::aligned_alloc(kStreamAlignBytes, (n + words_per_block) * sizeof(uint64_t)));
  if (!src || !dst) return 3;
  uint64_t x = 1;
  for (size_t i = 0; i < n + words_per_block; ++i) src[i] = x = x * 6364136223846793005ull + 1442695040888963407ull;
  int failures = 0;
  for (const auto& k : edgeprobe::probe::supported_stream_kernels()) {
    bool ok = true;
    for (size_t blocks : {size_t{1}, size_t{3}, size_t{1030}}) {
      const uint64_t* p = src + (blocks == 3 ? kStreamAlignBytes / sizeof(uint64_t) : 0);  // aligned, off-block
      uint64_t want = 0;
      for (size_t i = 0; i < blocks * words_per_block; ++i) want += p[i];
      ok = ok && k.read(p, blocks * kStreamBlockBytes) == want;
    }
    std::memset(dst, 0xab, (n + words_per_block) * sizeof(uint64_t));
    k.copy(dst, src, n * sizeof(uint64_t));
    ok = ok && std::memcmp(dst, src, n * sizeof(uint64_t)) == 0 && dst[n] == 0xababababababababull;
    std::printf("%-8s read+copy %s\n", k.isa.c_str(), ok ? "ok" : "WRONG");
    failures += ok ? 0 : 1;
  }
  std::free(src);
  std::free(dst);
  return failures == 0 ? 0 : 1;
}
