#include "doctor/finding.h"

#include <algorithm>
#include <string_view>

namespace edgeprobe::doctor {

const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::kCritical: return "critical";
    case Severity::kWarning: return "warning";
    case Severity::kInfo: return "info";
  }
  return "info";
}

void sort_by_impact(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    const auto rank = [](const Finding& f) { return f.data.contains("emulated") ? 1.0 : f.speedup.value_or(1.0); };
    return rank(a) > rank(b);
  });
}

std::string speedup_basis_word(const Finding& f) {
  std::string_view s = f.speedup_basis;
  const std::string emulated = std::string(kEmulatedSpeedup) + ": ";
  if (s.starts_with(emulated)) s.remove_prefix(emulated.size());
  for (const char* word : {"measured", "estimated", "none"})
    if (s.starts_with(word)) return word;
  return "";
}

nlohmann::json to_json(const Finding& f) {
  nlohmann::json j = {{"id", f.id},
                      {"severity", severity_name(f.severity)},
                      {"title", f.title},
                      {"evidence", f.evidence},
                      {"affects", f.affects},
                      {"fix", f.fix},
                      {"data", f.data}};
  const std::string word = speedup_basis_word(f);
  j["speedup"] = f.speedup ? nlohmann::json(*f.speedup) : nlohmann::json(nullptr);
  j["speedup_basis"] = word.empty() ? nlohmann::json(nullptr) : nlohmann::json(word);
  j["speedup_detail"] = f.speedup_basis.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.speedup_basis);
  return j;
}

}  // namespace edgeprobe::doctor
