#pragma once
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/job.h"
#include "model/gguf_info.h"
#include "predict/predict.h"
#include "predict/speculative.h"
#include "result/result.h"

namespace edgeprobe::app {

// What `edgeprobe predict` is asked: models, the configurations (bench's sweep lists) and
// the device (this machine, a device in the store, or a spec).
struct PredictPlan {
  // A GGUF file, synth:SHAPE[:QUANT], or a named shape alone (then each of `quants`).
  std::vector<std::string> models{"synth:tinyllama-1.1b"};
  std::vector<std::string> quants;  // with shapes; empty = the spec's own, else q4_0
  std::vector<int> threads;         // empty = the device's default thread count
  std::vector<int> n_prompt{512}, n_gen{128}, n_depth{0}, n_ubatch{512};
  std::vector<std::string> type_k{"f16"};
  std::string cpu_variant;          // this machine: the ggml CPU variant ("" = the best)
  std::string device_id;            // a device in the store ("" = this machine)
  std::string gpu;                  // predict for this GPU of the device ("Vulkan0"; "" = its CPU)
  std::optional<predict::DeviceSpec>
      spec;                 // a device never measured (with device_spec: overrides, 0 = not given)
  std::string device_spec;  // a device of the catalogue (data/predict), by key or alias
  std::string backend;      // with a spec or a catalogue device: cpu, cuda, metal, vulkan, opencl, rocm
  std::string db;                   // the store: checks, stored devices, efficiencies
  // Speculative decoding (docs/speculative.md, "When it pays"): a draft model (a GGUF file
  // or synth:SHAPE[:QUANT]; "" = off), its draft lengths, and the acceptance to predict at:
  // a per-token alpha given, or a bench --draft run's measured acceptance per position.
  std::string draft;
  std::vector<int> draft_max;        // empty = 2, 4, 8 (with acceptance_from: the run's)
  std::optional<double> acceptance;  // alpha, 0..1
  std::string acceptance_from;       // a bench --draft run: id or result file
  bool remeasure = false;           // measure this machine's step costs again
  std::string sysfs_root = "/";
};

// The most rows one predict prints: a larger sweep is refused with its size.
inline constexpr size_t kMaxPredictRows = 1000;

// One draft length of speculative decoding on a row's configuration.
struct SpecRow {
  int draft_max = 0;
  predict::SpecCosts costs;            // 0 where the prediction was unavailable (its notes say why)
  std::optional<double> break_even;    // alpha at speed-up 1; nullopt: it cannot pay at this length
  std::string acceptance_basis;        // "given", "measured in run X", "" = none given
  std::vector<double> position_rates;  // measured, per draft position
  double alpha = 0;                    // given, or the measured positions' equivalent (acceptance_for_tokens)
  double expected_tokens = 0;          // per verify step; 0 without an acceptance
  double speed_up = 0;                 // 0 without an acceptance
};

struct PredictRow {
  std::string model;  // as given, with the quantization a shape was given in
  std::string quant;  // the dominant weight type
  predict::Prediction prediction;
  std::vector<SpecRow> speculative;  // with a draft
};

struct PredictReport {
  std::string device;        // "this machine (cpu)", "dev-… from run 12", "spec: 25 GB/s"
  std::string device_basis;  // where its figures come from
  bool emulated = false;     // qemu-user: the figures describe the emulator, not a device
  std::string draft;         // predict --draft: the draft model, as given
  std::vector<PredictRow> rows;
  std::vector<std::string> notes;
};

// Resolves one -m value into the tensors a prediction reads (no file is written for a
// shape: llama.cpp's quantizer plans the layout). Throws kBadInput for an unknown shape or
// quantization, listing the known ones.
std::vector<std::pair<std::string, model::GgufInfo>> predict_models(const std::string& spec,
                                                                    const std::vector<std::string>& quants);

PredictReport run_predict(const PredictPlan& plan, const JobContext& context);

// A bench --draft run's measured acceptance per draft position, by draft length (the first
// test of each length). Throws kBadInput when the run measured no speculation.
std::map<int, std::vector<double>> measured_acceptance(const std::string& run_or_file, const std::string& db);

// Speculative decoding's costs and speed-up for each draft length on one configuration, from
// the same ceilings and step costs as the row's own prediction (docs/speculative.md).
// `measured` (from measured_acceptance) wins over `alpha` where it has the length.
std::vector<SpecRow> predict_speculation(const model::GgufInfo& target, const model::GgufInfo& draft,
                                         const probe::DeviceCeilings& ceilings, const predict::Config& config,
                                         const std::vector<int>& lengths, std::optional<double> alpha,
                                         const std::map<int, std::vector<double>>& measured,
                                         const std::string& measured_basis, std::vector<std::string>& notes);

// The catalogue directory: $EDGEPROBE_DATA_DIR/predict, else the source tree's data/predict.
std::string predict_catalogue_dir();

nlohmann::json to_json(const PredictReport& report);
nlohmann::json to_json(const std::vector<SpecRow>& rows);

// What a bench test carries next to its measurement (roofline.prediction): the prediction
// from the run's own ceilings, with the measured best and median repetitions' ratios to it.
nlohmann::json bench_prediction(const result::TestResult& result, const model::GgufInfo& info,
                                const probe::DeviceCeilings& ceilings);

// measured / predicted for each test of a stored bench run (predict --check): rows of
// {test, phase, predicted, measured_best, error} in JSON.
nlohmann::json check_stored_run(const std::string& run_or_file, const std::string& db);

}  // namespace edgeprobe::app
