#include "cli/common.h"

#include <map>

#include "core/build_info.h"
#include "core/text.h"
#include "edgeprobe_version.h"
#include "engine/backend.h"
#include "workload/sweep.h"

namespace edgeprobe::cli {

std::vector<std::string> rewrite_llama_bench_aliases(const std::vector<std::string>& args) {
  static const std::map<std::string, std::string> kAliases = {
      {"-pg", "--pg"},          {"-ub", "--ubatch-size"}, {"-fa", "--flash-attn"}, {"-ctk", "--cache-type-k"},
      {"-ctv", "--cache-type-v"}, {"-mmp", "--mmap"},     {"-nw", "--no-warmup"},  {"-ngl", "--n-gpu-layers"},
      {"-dev", "--device"},       {"-sm", "--split-mode"},  {"-mg", "--main-gpu"},   {"-nopo", "--no-op-offload"}};
  std::vector<std::string> out;
  for (const auto& a : args) {
    auto it = kAliases.find(a);
    out.push_back(it == kAliases.end() ? a : it->second);
  }
  return out;
}

std::vector<std::string> split_all(const std::vector<std::string>& texts) {
  std::vector<std::string> out;
  for (const auto& t : texts)
    for (auto& item : workload::split_list(t)) out.push_back(item);
  return out;
}

std::vector<std::string> ints_as_text(const std::vector<int>& values) {
  std::vector<std::string> out;
  for (int v : values) out.push_back(std::to_string(v));
  return out;
}

std::string join_command_line(const std::vector<std::string>& args) { return shell_join(args); }

std::string version_text() {
  std::string variants;
  for (const auto& v : engine::installed_cpu_variants()) variants += (variants.empty() ? "" : ", ") + v;
  return std::string("edgeprobe ") + kVersion + " (git " + build_summary() + ")\nllama.cpp " + kLlamaCppVersion +
         " (commit " + kLlamaCppCommit + "), ggml CPU variants installed: " +
         (variants.empty() ? "none found (a static build)" : variants);
}

}  // namespace edgeprobe::cli
