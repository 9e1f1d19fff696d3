#pragma once
// `predict` for a device that is not at hand (issue 47): efficiencies fitted at run time from
// the FIT measurements of data/predict (catalogue.h), never from constants in code.
//
//   decode  = min(E_bw x bandwidth / bytes a token reads, c x cores used / params)
//             E_bw: the share of the memory bandwidth published runs reached (tokens/s x bytes
//             per token / bandwidth), per backend and device class;
//             c: the weights per second one CPU core gets through (per core.GHz, or per core
//             where the catalogue has no clock), from CPU runs that used fewer threads than
//             the device has cores;
//   prefill = r x compute units / (2 x params)
//             r: FLOP/s per GPU core (GPU backends) or per CPU core.GHz (per core without a
//             clock) over the t fastest cores;
//   interval: the 10th-90th percentile of measured / predicted over the fit entries of the
//             same backend and class, each predicted with its own device left out of the fit.
// docs/predict.md ("A device from the catalogue") describes the model and its evidence.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predict/catalogue.h"

namespace edgeprobe::predict::published {

// Pools with fewer entries than this are not used for an efficiency when a wider one exists.
inline constexpr size_t kMinPoolEntries = 3;
// An interval from fewer fit entries than this is thin: it is widened to the next wider pool.
inline constexpr size_t kThinEntries = 5;

// Bits per weight of a llama.cpp file type as its quantizer lays out a Llama-2-7B (mixed
// types such as q4_k_m keep some tensors wider); empty for a type it does not know.
std::optional<double> bits_per_weight(std::string_view quant);

// What the model reads of a device (a catalogue entry, possibly overridden by flags).
struct Figures {
  std::string device_class;                  // "" = unknown (a spec given by flags only)
  double bandwidth_gbs = 0;                  // 0 = unknown
  std::string bandwidth_basis;               // "read: <locator>", "derived: <formula>", "--bandwidth"
  std::vector<catalogue::Cluster> clusters;  // CPU clusters (empty = unknown)
  int gpu_cores = 0;                         // 0 = unknown
  double memory_gb = 0;                      // 0 = unknown
  int total_cores() const;
};
Figures figures_of(const catalogue::Device& device);

// One published measurement, as the model sees it.
struct Query {
  std::string phase;    // "decode" or "prefill"
  std::string backend;  // cpu, cuda, metal, vulkan, opencl, rocm
  Figures figures;
  int threads = 0;          // 0 = the default: every core of the device
  double weight_bytes = 0;  // bytes a decode step reads (the weights as the file holds them)
  double params = 0;        // parameters (FLOPs per prompt token = 2 x params)
};

struct Pool {
  std::string key;
  std::vector<double> values;
  std::vector<std::string> ids, devices;
  double median() const;
  double quantile(double q) const;
  size_t distinct_devices() const;
};

struct Calibration {
  std::vector<Pool> pools;           // efficiencies, by key
  std::vector<Pool> residuals;       // measured / predicted, each with its device left out
  std::vector<std::string> skipped;  // "m110: mixture of experts ..." (fit entries not used)
  size_t fit_entries = 0;
  const Pool* find(const std::string& key) const;
  const Pool* find_residual(const std::string& key) const;
};

// Fits on the catalogue's split "fit" entries (exclude_device: leave that device out).
Calibration fit(const catalogue::Catalogue& catalogue, const std::string& exclude_device = "");
// The efficiencies alone, without the left-out residuals (what fit() builds on).
Calibration fit_efficiencies(const catalogue::Catalogue& catalogue, const std::string& exclude_device = "");

struct Answer {
  double value = 0, low = 0, high = 0;  // tokens/s; value 0 = unavailable (why in notes)
  std::string bound;                    // decode: "bandwidth" or "cores"; prefill: "compute"
  std::string basis;                    // the evidence, in words
  bool thin = false;
  std::vector<std::string> notes;
};
Answer predict(const Calibration& calibration, const Query& query);

// A catalogue measurement as a query (bytes from file_gib, else params x bits per weight);
// empty with the reason in *why when the model cannot take it.
std::optional<Query> query_of(const catalogue::Catalogue& catalogue, const catalogue::Measurement& m,
                              std::string* why = nullptr);

}  // namespace edgeprobe::predict::published
