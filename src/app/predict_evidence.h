#pragma once
// The evidence behind predict's intervals and efficiencies (internal to app/): how far
// stored runs on a device fell from their predictions, the kernel probe's own spread, and
// the efficiencies stored runs reached against their roofs.
#include <string>
#include <utility>
#include <vector>

#include "model/gguf_info.h"
#include "predict/predict.h"
#include "probe/ceilings.h"
#include "store/store.h"

namespace edgeprobe::app {

// measured (best repetition) / predicted of the newest stored bench runs on a device.
struct Checks {
  std::vector<double> decode, prefill;
};

// gpu: "" for runs judged against the CPU's ceilings, else that GPU's (roofline.ceiling_device).
Checks stored_checks(const store::Store* store, const std::string& device_id, const std::string& gpu);
// The spread of a kernel probe's runs (median / best) stands in until the store holds checks.
predict::Spread probe_spread(const probe::DeviceCeilings& c, const model::GgufInfo& info, int threads,
                             bool decode);
// The 10th-90th percentile of the checks, or `fallback` with fewer than three.
predict::Spread check_spread(const std::vector<double>& ratios, const predict::Spread& fallback);
// Efficiencies stored runs reached against their roofs (bandwidth for decode, compute for
// prefill), the basis of a spec-only prediction.
std::pair<predict::Efficiency, predict::Efficiency> stored_efficiencies(const store::Store* store);

}  // namespace edgeprobe::app
