// The ceilings cache's file format (probe/ceilings.h): apart from measuring and caching, so
// a reader of the format sees it whole.
#include <nlohmann/json.hpp>

#include "core/json_read.h"
#include "probe/ceilings.h"

namespace edgeprobe::probe {

nlohmann::json to_json(const DeviceCeilings& c) {
  nlohmann::json j = {{"schema_version", DeviceCeilings::kSchemaVersion},
                      {"device_key", c.device_key},
                      {"build_key", c.build_key},
                      {"cpu_model", c.cpu_model},
                      {"measured_at_utc", c.measured_at_utc},
                      {"probe_seconds", c.probe_seconds},
                      {"threads", c.threads},
                      {"llc_total_bytes", c.llc_total_bytes},
                      {"memory_bytes", c.memory_bytes},
                      {"bandwidth_gb_per_s", c.bandwidth_gb_per_s()},
                      {"bandwidth", to_json(c.bandwidth)},
                      {"compute_status", c.compute_status},
                      {"compute", to_json(c.compute)},
                      {"storage", c.storage ? to_json(*c.storage) : nlohmann::json(nullptr)}};
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : c.kernels) kernels.push_back(to_json(k));
  j["model_kernels"] = kernels;
  nlohmann::json costs = nlohmann::json::array();
  for (const auto& sc : c.step_costs)
    costs.push_back({{"threads", sc.threads},
                     {"method", sc.method},
                     {"decode_fixed_ms", sc.decode_fixed_ms},
                     {"decode_layer_ms", sc.decode_layer_ms},
                     {"decode_attention_ns", sc.decode_attention_ns},
                     {"prefill_fixed_ms", sc.prefill_fixed_ms},
                     {"prefill_layer_ms", sc.prefill_layer_ms},
                     {"prefill_attention_ns", sc.prefill_attention_ns},
                     {"decode_residual", sc.decode_residual},
                     {"prefill_residual", sc.prefill_residual},
                     {"basis", sc.basis},
                     {"measured_at_utc", sc.measured_at_utc}});
  j["step_costs"] = costs;
  if (!c.device.empty()) {
    j["device"] = c.device;
    j["device_description"] = c.device_description;
  }
  if (!c.gpus.empty()) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : c.gpus) gpus.push_back(to_json(g));
    j["gpus"] = gpus;
  }
  return j;
}

DeviceCeilings ceilings_from_json(const nlohmann::json& j) {
  DeviceCeilings c;
  c.device_key = j.value("device_key", "");
  c.build_key = j.value("build_key", "");
  c.cpu_model = j.value("cpu_model", "");
  c.measured_at_utc = j.value("measured_at_utc", "");
  c.probe_seconds = j.value("probe_seconds", 0.0);
  c.threads = j.value("threads", 0);
  c.llc_total_bytes = j.value("llc_total_bytes", uint64_t{0});
  c.memory_bytes = j.value("memory_bytes", uint64_t{0});
  if (j.contains("bandwidth")) c.bandwidth = bandwidth_from_json(j["bandwidth"]);
  c.compute_status = j.value("compute_status", "");
  if (j.contains("compute")) c.compute = compute_from_json(j["compute"]);
  if (j.contains("storage") && j["storage"].is_object()) c.storage = storage_from_json(j["storage"]);
  if (j.contains("model_kernels") && j["model_kernels"].is_array())
    for (const auto& k : j["model_kernels"]) c.kernels.push_back(kernel_point_from_json(k));
  if (j.contains("step_costs") && j["step_costs"].is_array())
    for (const auto& e : j["step_costs"]) {
      if (!e.is_object()) continue;
      StepCosts sc;
      sc.threads = e.value("threads", 0);
      sc.method = e.value("method", 1);
      sc.decode_fixed_ms = e.value("decode_fixed_ms", 0.0);
      sc.decode_layer_ms = e.value("decode_layer_ms", 0.0);
      sc.decode_attention_ns = e.value("decode_attention_ns", 0.0);
      sc.prefill_fixed_ms = e.value("prefill_fixed_ms", 0.0);
      sc.prefill_layer_ms = e.value("prefill_layer_ms", 0.0);
      sc.prefill_attention_ns = e.value("prefill_attention_ns", 0.0);
      sc.decode_residual = e.value("decode_residual", 0.0);
      sc.prefill_residual = e.value("prefill_residual", 0.0);
      sc.basis = e.value("basis", "");
      sc.measured_at_utc = e.value("measured_at_utc", "");
      if (sc.threads > 0) c.step_costs.push_back(sc);
    }
  c.device = j.value("device", "");
  c.device_description = j.value("device_description", "");
  // One level only: a GPU entry holds no GPUs of its own.
  if (c.device.empty() && j.contains("gpus") && j["gpus"].is_array())
    for (const auto& g : j["gpus"])
      if (g.is_object() && g.value("device", "") != "") c.gpus.push_back(ceilings_from_json(g));
  return c;
}

}  // namespace edgeprobe::probe
