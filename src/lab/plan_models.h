#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace edgeprobe::lab {

// The model fields of a bench or session plan (JSON, as docs/wire-format.md writes it):
// bench sweep.models and cases[].model_path, session models and configs[].model_path.
// Distinct values in order of appearance.
std::vector<std::string> plan_models(const nlohmann::json& plan);
// The same plan with every model field passed through `map`.
nlohmann::json map_plan_models(nlohmann::json plan,
                               const std::function<std::string(const std::string&)>& map);

}  // namespace edgeprobe::lab
