// The bandwidth probe's kernels compute what they claim on this CPU: every kernel the CPU
// runs sums like a plain loop and copies exactly, and dispatch picks the widest supported.
// No timing here: speed is bench/bandwidth-check.sh's business.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "probe/bandwidth_kernels.h"

namespace edgeprobe::probe {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

std::unique_ptr<uint64_t[], FreeDeleter> words(size_t n, uint64_t seed) {
  auto* p = static_cast<uint64_t*>(std::aligned_alloc(kStreamAlignBytes, n * sizeof(uint64_t)));
  uint64_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;  // large values: sums wrap
    p[i] = x;
  }
  return std::unique_ptr<uint64_t[], FreeDeleter>(p);
}

uint64_t plain_sum(const uint64_t* p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += p[i];
  return s;
}

TEST(BandwidthKernels, GenericIsAlwaysSupportedAndLast) {
  const auto all = supported_stream_kernels();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.back().isa, "generic");
  for (const auto& k : all) {
    EXPECT_NE(k.read, nullptr) << k.isa;
    EXPECT_NE(k.copy, nullptr) << k.isa;
  }
}

TEST(BandwidthKernels, DispatchPicksTheWidestTheCpuRuns) {
  const auto all = supported_stream_kernels();
  EXPECT_EQ(stream_kernels().isa, all.front().isa);
#if defined(__x86_64__)
  __builtin_cpu_init();
  const std::string widest = __builtin_cpu_supports("avx512f") ? "avx512"
                             : __builtin_cpu_supports("avx2")  ? "avx2"
                                                               : "generic";
  EXPECT_EQ(stream_kernels().isa, widest);
#elif defined(__aarch64__)
  EXPECT_EQ(stream_kernels().isa, "neon");
#endif
  for (const auto& k : all) EXPECT_EQ(stream_kernels(k.isa).isa, k.isa);
  EXPECT_THROW(stream_kernels("vliw9000"), std::invalid_argument);
}

TEST(BandwidthKernels, EveryKernelSumsLikeAPlainLoop) {
  // Whole blocks only, at several sizes and at an offset that is aligned but not to a block.
  const size_t words_per_block = kStreamBlockBytes / sizeof(uint64_t);
  const size_t n = 4099 * words_per_block;
  const auto buf = words(n, 42);
  for (const auto& k : supported_stream_kernels()) {
    for (size_t blocks : {1, 2, 7, 4096}) {
      for (size_t offset : {size_t{0}, kStreamAlignBytes / sizeof(uint64_t)}) {
        const uint64_t* p = buf.get() + offset;
        const size_t len = blocks * words_per_block;
        EXPECT_EQ(k.read(p, len * sizeof(uint64_t)), plain_sum(p, len))
            << k.isa << " " << blocks << " blocks at offset " << offset;
      }
    }
    EXPECT_EQ(k.read(buf.get(), 0), 0u) << k.isa;
  }
}

TEST(BandwidthKernels, EveryKernelCopiesExactlyTheRangeAsked) {
  const size_t words_per_block = kStreamBlockBytes / sizeof(uint64_t);
  const size_t blocks = 1025;
  const size_t guard = words_per_block;  // untouched words after the destination
  const size_t n = blocks * words_per_block;
  for (const auto& k : supported_stream_kernels()) {
    const auto src = words(n, 7);
    const auto dst = words(n + guard, 99);
    const uint64_t after = dst[n];
    k.copy(dst.get(), src.get(), n * sizeof(uint64_t));
    EXPECT_EQ(std::memcmp(dst.get(), src.get(), n * sizeof(uint64_t)), 0) << k.isa;
    EXPECT_EQ(dst[n], after) << k.isa << " wrote past the end";
  }
}

}  // namespace
}  // namespace edgeprobe::probe
