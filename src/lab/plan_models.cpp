#include "lab/plan_models.h"

#include <algorithm>

namespace edgeprobe::lab {
namespace {

using nlohmann::json;

// Calls f on every model string of the plan, in order.
void each_model(json& plan, const std::function<void(json&)>& f) {
  // A plan without models runs the built-in default (""): made explicit so it is mapped too.
  if (plan.value("kind", "") == "doctor") {
    if (!plan.contains("model")) plan["model"] = "";
    f(plan["model"]);
    return;
  }
  if (plan.value("kind", "") == "bench") {
    if (!plan.contains("cases") && !(plan.contains("sweep") && plan["sweep"].contains("models")))
      plan["sweep"]["models"] = json::array({""});
    if (plan.contains("sweep"))
      for (auto& m : plan["sweep"]["models"]) f(m);
  } else {
    if (!plan.contains("configs") && !plan.contains("models")) plan["models"] = json::array({""});
    if (plan.contains("models"))
      for (auto& m : plan["models"]) f(m);
  }
  for (const char* list : {"cases", "configs"})
    if (plan.contains(list))
      for (auto& c : plan[list])
        if (c.contains("model_path")) f(c["model_path"]);
}

}  // namespace

std::vector<std::string> plan_models(const json& plan_in) {
  json plan = plan_in;
  std::vector<std::string> out;
  each_model(plan, [&](json& m) {
    const std::string s = m.is_string() ? m.get<std::string>() : "";
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  });
  return out;
}

json map_plan_models(json plan, const std::function<std::string(const std::string&)>& map) {
  each_model(plan, [&](json& m) { m = map(m.is_string() ? m.get<std::string>() : ""); });
  return plan;
}

}  // namespace edgeprobe::lab
