#pragma once
// The bandwidth probe's streaming kernels, one set per instruction set, picked at run time:
// the binary is built for a baseline CPU and runs on many, so the wide kernels are compiled
// with target attributes and chosen by what this CPU supports. Depends on the C++ standard
// library only, so it can be cross-compiled and run alone (tests/platform/stream_kernels_arm.sh).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace edgeprobe::probe {

// Every kernel works in whole blocks: a slice's length is a multiple of this, its start
// 64-byte aligned (a cache line; the widest loads are aligned).
constexpr size_t kStreamBlockBytes = 256;
constexpr size_t kStreamAlignBytes = 64;

struct StreamKernels {
  std::string isa;  // "avx512", "avx2", "neon", "generic" (16-byte vectors of the compiler)
  // Sum of the 64-bit words of [p, p + bytes), wrapping: the same value from every kernel.
  uint64_t (*read)(const void* p, size_t bytes) = nullptr;
  // dst[0, bytes) = src[0, bytes); the ranges do not overlap.
  void (*copy)(void* dst, const void* src, size_t bytes) = nullptr;
  bool non_temporal_stores = false;  // copy writes around the caches
};

// The kernels this CPU (and OS) can run, widest first; "generic" is always last.
std::vector<StreamKernels> supported_stream_kernels();

// The kernels named `isa`, or the widest supported when `isa` is empty. Throws
// std::invalid_argument for a name this CPU cannot run.
StreamKernels stream_kernels(const std::string& isa = "");

}  // namespace edgeprobe::probe
