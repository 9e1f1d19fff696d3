#include "doctor/finding.h"

#include <algorithm>

namespace edgeprobe::doctor {

void sort_by_impact(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    const auto rank = [](const Finding& f) { return f.data.contains("emulated") ? 1.0 : f.speedup.value_or(1.0); };
    return rank(a) > rank(b);
  });
}

}  // namespace edgeprobe::doctor
