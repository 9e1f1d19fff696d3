#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "core/context_defaults.h"

namespace edgeprobe::workload {

// "1,2" / "64-512*2" / "1-8+2" / "4-6" -> the integers, in order. Ranges as in
// llama-bench: first-last (step 1), first-last+step, first-last*mult. Throws kBadInput
// naming the flag and the offending item.
std::vector<int> parse_int_list(const std::string& text, const std::string& flag);
// Several occurrences of one flag (-t 1 -t 2,4) joined into one list.
std::vector<int> parse_int_lists(const std::vector<std::string>& texts, const std::string& flag);
std::vector<std::string> split_list(const std::string& text, char sep = ',');
// "on"/"off"/"auto"/"1"/"0"/"-1" -> 1/0/-1.
int parse_flash_attn(const std::string& text);
bool parse_bool(const std::string& text, const std::string& flag);

enum class TestKind { kPrompt, kGenerate, kPromptGenerate };

// One configuration to measure: a test of one kind with every parameter fixed.
struct TestCase {
  std::string model_path;
  bool use_mmap = true;
  TestKind kind = TestKind::kPrompt;
  int n_prompt = 0;
  int n_gen = 0;
  int n_depth = 0;
  int n_threads = 1;
  std::string cpu_mask;  // "" = default affinity
  bool cpu_strict = false;
  int poll = kDefaultPoll;
  int n_batch = kDefaultBatch;
  int n_ubatch = kDefaultUbatch;
  int flash_attn = -1;
  std::string type_k = kDefaultCacheType;
  std::string type_v = kDefaultCacheType;
  // GPU offload (engine::ModelOptions and ContextOptions say what each means).
  int n_gpu_layers = kDefaultGpuLayers;
  std::string devices;  // "" = llama.cpp's choice
  std::string split_mode = "layer";
  int main_gpu = 0;
  bool op_offload = true;

  std::string name() const;  // "pp512", "tg128", "pp512+tg128", with " @ d512" at depth
  // Tests that can share one load of the model (the GPU settings are load settings).
  bool same_model(const TestCase& other) const {
    return model_path == other.model_path && use_mmap == other.use_mmap && n_gpu_layers == other.n_gpu_layers &&
           devices == other.devices && split_mode == other.split_mode && main_gpu == other.main_gpu;
  }
};

// Every swept parameter as given by the user, after parsing. Empty lists take defaults.
struct SweepSpec {
  std::vector<std::string> models;
  std::vector<int> n_prompt{512};
  std::vector<int> n_gen{128};
  std::vector<std::pair<int, int>> prompt_gen;  // -pg pairs
  std::vector<int> n_depth{0};
  std::vector<int> threads;                     // empty = default thread count
  std::vector<std::string> cpu_masks{""};
  std::vector<int> cpu_strict{0};
  std::vector<int> poll{kDefaultPoll};
  std::vector<int> n_batch{kDefaultBatch};
  std::vector<int> n_ubatch{kDefaultUbatch};
  std::vector<int> flash_attn{-1};
  std::vector<std::string> type_k{kDefaultCacheType};
  std::vector<std::string> type_v{kDefaultCacheType};
  std::vector<int> use_mmap{1};
  std::vector<int> n_gpu_layers{kDefaultGpuLayers};
  std::vector<std::string> devices{""};
  std::vector<std::string> split_mode{"layer"};
  std::vector<int> main_gpu{0};
  std::vector<int> op_offload{1};
};

// The cross product, ordered so that all tests of one model (and load mode and offload)
// run together: a model loads once per group, never once per test.
std::vector<TestCase> expand(const SweepSpec& spec, int default_threads);

// The names of the parameters that take more than one value (for the md table's columns).
std::vector<std::string> varied_parameters(const std::vector<TestCase>& cases);

// Physical cores this process may run on (SMT siblings counted once); at least 1.
int default_thread_count();
// CPUs this process may run on (its affinity mask, SMT siblings each counted); at least 1.
int usable_cpu_count();
// "" when every count fits in `usable` CPUs; else one line naming the largest count and
// what it means: more threads than CPUs wait for each other, so the figures measure
// oversubscription (a run goes on: it may be what the user wants to see).
std::string oversubscription_warning(const std::vector<int>& thread_counts, int usable);

}  // namespace edgeprobe::workload
