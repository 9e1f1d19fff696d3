#pragma once

// llama.cpp's context defaults (llama_context_default_params, which llama-bench takes too):
// every edgeprobe job starts from them, in one place, so that a bench, a doctor run, a probe
// and a session that leave a setting alone measure the same thing.
namespace edgeprobe {

inline constexpr int kDefaultBatch = 2048;   // logical batch: prompt tokens per decode call
inline constexpr int kDefaultUbatch = 512;   // physical batch: tokens per compute graph
inline constexpr int kDefaultPoll = 50;      // threadpool polling level, 0..100
inline constexpr const char* kDefaultCacheType = "f16";  // K and V cache type
inline constexpr int kDefaultGpuLayers = -1;  // llama-bench's -ngl: every layer a GPU can take

}  // namespace edgeprobe
