#include "probe/bandwidth_kernels.h"

#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EDGEPROBE_STREAM_X86 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define EDGEPROBE_STREAM_NEON 1
#endif

// Why these kernels. Figures from bench/stream_ab (this file's kernels against a double
// sum built -O3 -march=native -ffast-math, which GCC turns into zmm adds; alternating pass
// by pass, best of 25-30 each) on the AMD EPYC (Zen 5) dev VM, 2 cores, 1 GiB:
// - Width. The old kernel, 16-byte vectors with 8 accumulators ("generic" here), read
//   0.84-0.87 of the reference at 1 thread and 0.70-0.93 at 2 (issue 19 found 0.81-0.88);
//   32-byte AVX2 loads 0.98-1.05; 64-byte AVX-512 loads 1.00-1.05. Issue width does not
//   limit a core (2 x 16 B loads a cycle already exceed DRAM); the load queue does: a
//   16-byte kernel spends 4 entries per cache line and keeps fewer lines in flight.
//   AArch64's equivalent of a line per load is one LD1 of four q registers.
// - Independent accumulators (4-8), so no add latency chain paces the loads.
// - Four streams per thread read in lockstep (1.02-1.17 of the reference) and software
//   prefetch, NTA 1 KiB ahead (0.97-1.17), were within the noise of the plain AVX-512 loop
//   (1.02-1.14) in the same runs, so they are left out: the hardware prefetchers run ahead.
// - Huge pages (the probe's buffer, not these kernels): AVX-512 reads on a THP-backed
//   buffer ran 1.04-1.08 of the same on 4 KiB pages.
// - Copy with non-temporal stores (x86) ran at 1.44-1.47 of the same copy with ordinary
//   stores, which read every destination line before writing it (write-allocate), traffic
//   STREAM's byte count leaves out. Streaming stores move only the counted bytes, so the
//   figure is what the memory system gives. AArch64 keeps ordinary stores: STNP is a hint
//   many cores ignore, and most detect streaming writes and skip the allocate themselves.

namespace edgeprobe::probe {
namespace {

// Portable fallback: GCC/Clang vector extensions (SSE2 on x86-64, NEON on AArch64).
typedef uint64_t V2 __attribute__((vector_size(16), aligned(16)));

uint64_t read_generic(const void* p, size_t bytes) {
  const V2* v = static_cast<const V2*>(p);
  const size_t n = bytes / sizeof(V2);
  V2 a0 = {0, 0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (size_t i = 0; i + 16 <= n; i += 16) {
    a0 += v[i] + v[i + 8];
    a1 += v[i + 1] + v[i + 9];
    a2 += v[i + 2] + v[i + 10];
    a3 += v[i + 3] + v[i + 11];
    a4 += v[i + 4] + v[i + 12];
    a5 += v[i + 5] + v[i + 13];
    a6 += v[i + 6] + v[i + 14];
    a7 += v[i + 7] + v[i + 15];
  }
  const V2 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  return s[0] + s[1];
}

void copy_generic(void* dst, const void* src, size_t bytes) {
  V2* d = static_cast<V2*>(dst);
  const V2* s = static_cast<const V2*>(src);
  const size_t n = bytes / sizeof(V2);
  for (size_t i = 0; i + 16 <= n; i += 16) {
    for (size_t k = 0; k < 16; ++k) d[i + k] = s[i + k];
    // Keeps the compiler from turning the loop into memcpy, whose strategy (and stores)
    // differ between libcs and sizes.
    __asm__ volatile("" ::: "memory");
  }
}

#ifdef EDGEPROBE_STREAM_X86
__attribute__((target("avx2"))) uint64_t read_avx2(const void* p, size_t bytes) {
  const __m256i* v = static_cast<const __m256i*>(p);
  const size_t n = bytes / sizeof(__m256i);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    a0 = _mm256_add_epi64(a0, _mm256_add_epi64(_mm256_load_si256(v + i), _mm256_load_si256(v + i + 4)));
    a1 = _mm256_add_epi64(a1, _mm256_add_epi64(_mm256_load_si256(v + i + 1), _mm256_load_si256(v + i + 5)));
    a2 = _mm256_add_epi64(a2, _mm256_add_epi64(_mm256_load_si256(v + i + 2), _mm256_load_si256(v + i + 6)));
    a3 = _mm256_add_epi64(a3, _mm256_add_epi64(_mm256_load_si256(v + i + 3), _mm256_load_si256(v + i + 7)));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  return static_cast<uint64_t>(_mm_cvtsi128_si64(h)) + static_cast<uint64_t>(_mm_extract_epi64(h, 1));
}

__attribute__((target("avx2"))) void copy_avx2(void* dst, const void* src, size_t bytes) {
  __m256i* d = static_cast<__m256i*>(dst);
  const __m256i* s = static_cast<const __m256i*>(src);
  const size_t n = bytes / sizeof(__m256i);
  for (size_t i = 0; i + 8 <= n; i += 8)
    for (size_t k = 0; k < 8; ++k) _mm256_stream_si256(d + i + k, _mm256_load_si256(s + i + k));
  _mm_sfence();  // streaming stores are weakly ordered: finish them before the pass ends
}

__attribute__((target("avx512f"))) uint64_t read_avx512(const void* p, size_t bytes) {
  const __m512i* v = static_cast<const __m512i*>(p);
  const size_t n = bytes / sizeof(__m512i);
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 4 <= n; i += 4) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(v + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(v + i + 1));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(v + i + 2));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(v + i + 3));
  }
  // Stored and summed by hand: GCC 12's _mm512_reduce_add_epi64 warns (-Wuninitialized).
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  uint64_t sum = 0;
  for (uint64_t lane : lanes) sum += lane;
  return sum;
}

__attribute__((target("avx512f"))) void copy_avx512(void* dst, const void* src, size_t bytes) {
  __m512i* d = static_cast<__m512i*>(dst);
  const __m512i* s = static_cast<const __m512i*>(src);
  const size_t n = bytes / sizeof(__m512i);
  for (size_t i = 0; i + 4 <= n; i += 4)
    for (size_t k = 0; k < 4; ++k) _mm512_stream_si512(d + i + k, _mm512_load_si512(s + i + k));
  _mm_sfence();
}
#endif

#ifdef EDGEPROBE_STREAM_NEON
uint64_t read_neon(const void* p, size_t bytes) {
  const uint64_t* w = static_cast<const uint64_t*>(p);
  const size_t n = bytes / sizeof(uint64_t);  // 8 words = one 64-byte line per LD1
  uint64x2_t a0 = vdupq_n_u64(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    const uint64x2x4_t x = vld1q_u64_x4(w + i), y = vld1q_u64_x4(w + i + 8);
    const uint64x2x4_t z = vld1q_u64_x4(w + i + 16), u = vld1q_u64_x4(w + i + 24);
    a0 = vaddq_u64(a0, vaddq_u64(x.val[0], z.val[0]));
    a1 = vaddq_u64(a1, vaddq_u64(x.val[1], z.val[1]));
    a2 = vaddq_u64(a2, vaddq_u64(x.val[2], z.val[2]));
    a3 = vaddq_u64(a3, vaddq_u64(x.val[3], z.val[3]));
    a4 = vaddq_u64(a4, vaddq_u64(y.val[0], u.val[0]));
    a5 = vaddq_u64(a5, vaddq_u64(y.val[1], u.val[1]));
    a6 = vaddq_u64(a6, vaddq_u64(y.val[2], u.val[2]));
    a7 = vaddq_u64(a7, vaddq_u64(y.val[3], u.val[3]));
  }
  const uint64x2_t s = vaddq_u64(vaddq_u64(vaddq_u64(a0, a1), vaddq_u64(a2, a3)),
                                 vaddq_u64(vaddq_u64(a4, a5), vaddq_u64(a6, a7)));
  return vaddvq_u64(s);
}

void copy_neon(void* dst, const void* src, size_t bytes) {
  uint64_t* d = static_cast<uint64_t*>(dst);
  const uint64_t* s = static_cast<const uint64_t*>(src);
  const size_t n = bytes / sizeof(uint64_t);
  for (size_t i = 0; i + 32 <= n; i += 32) {
    for (size_t k = 0; k < 32; k += 8) vst1q_u64_x4(d + i + k, vld1q_u64_x4(s + i + k));
    __asm__ volatile("" ::: "memory");
  }
}
#endif

}  // namespace

std::vector<StreamKernels> supported_stream_kernels() {
  std::vector<StreamKernels> out;
#ifdef EDGEPROBE_STREAM_X86
  // libgcc's checks include the OS enabling the register state (XGETBV).
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) out.push_back({"avx512", read_avx512, copy_avx512, true});
  if (__builtin_cpu_supports("avx2")) out.push_back({"avx2", read_avx2, copy_avx2, true});
#endif
#ifdef EDGEPROBE_STREAM_NEON
  out.push_back({"neon", read_neon, copy_neon, false});  // baseline on AArch64
#endif
  out.push_back({"generic", read_generic, copy_generic, false});
  return out;
}

StreamKernels stream_kernels(const std::string& isa) {
  const auto all = supported_stream_kernels();
  if (isa.empty()) return all.front();
  for (const auto& k : all)
    if (k.isa == isa) return k;
  std::string names;
  for (const auto& k : all) names += (names.empty() ? "" : ", ") + k.isa;
  throw std::invalid_argument("bandwidth kernel '" + isa + "' does not run on this CPU (supported: " + names + ")");
}

}  // namespace edgeprobe::probe
