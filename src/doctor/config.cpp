#include "doctor/config.h"

#include <fmt/format.h>

namespace edgeprobe::doctor {

std::vector<std::string> RunConfig::bench_args() const {
  const RunConfig defaults;
  std::vector<std::string> a;
  if (threads > 0) a.insert(a.end(), {"-t", std::to_string(threads)});
  if (!cpu_mask.empty()) a.insert(a.end(), {"-C", cpu_mask});
  if (cpu_strict != defaults.cpu_strict) a.insert(a.end(), {"--cpu-strict", std::to_string(cpu_strict)});
  if (poll != defaults.poll) a.insert(a.end(), {"--poll", std::to_string(poll)});
  if (n_batch != defaults.n_batch) a.insert(a.end(), {"-b", std::to_string(n_batch)});
  if (n_ubatch != defaults.n_ubatch) a.insert(a.end(), {"-ub", std::to_string(n_ubatch)});
  if (flash_attn != defaults.flash_attn) a.insert(a.end(), {"-fa", flash_attn});
  if (type_k != defaults.type_k) a.insert(a.end(), {"-ctk", type_k});
  if (type_v != defaults.type_v) a.insert(a.end(), {"-ctv", type_v});
  if (!use_mmap) a.insert(a.end(), {"-mmp", "0"});
  if (!cpu_variant.empty()) a.insert(a.end(), {"--cpu-variant", cpu_variant});
  if (n_gpu_layers != defaults.n_gpu_layers) a.insert(a.end(), {"-ngl", std::to_string(n_gpu_layers)});
  if (!devices.empty()) a.insert(a.end(), {"-dev", devices});
  if (!op_offload) a.insert(a.end(), {"-nopo", "1"});
  return a;
}

std::string RunConfig::flags_text() const { return shell_join(bench_args()); }

std::string RunConfig::llama_cpp_flags_text() const {
  std::vector<std::string> a = bench_args();
  // llama-bench and llama-cli share these names; the variant is chosen by which
  // libggml-cpu-*.so the loader finds, not by a flag.
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == "--cpu-variant") {
      a.erase(a.begin() + static_cast<long>(i), a.begin() + static_cast<long>(i) + 2);
      break;
    }
  }
  std::string text = shell_join(a);
  if (!cpu_variant.empty())
    text += fmt::format("{}(ggml loads the best-scoring libggml-cpu-*.so in its directory; keep only libggml-cpu-{}.so "
                        "there to get this variant)",
                        text.empty() ? "" : " ", cpu_variant);
  return text;
}

std::string cpu_mask_of(const std::vector<int>& cpus) {
  std::vector<unsigned> nibbles;
  for (int c : cpus) {
    if (c < 0) continue;
    const size_t n = static_cast<size_t>(c) / 4;
    if (nibbles.size() <= n) nibbles.resize(n + 1, 0);
    nibbles[n] |= 1u << (c % 4);
  }
  std::string hex;
  for (auto it = nibbles.rbegin(); it != nibbles.rend(); ++it) hex += "0123456789abcdef"[*it];
  return "0x" + (hex.empty() ? std::string("0") : hex);
}

}  // namespace edgeprobe::doctor
