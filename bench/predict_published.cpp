// predict_published: every published measurement of data/predict predicted from its
// device's catalogue spec (src/predict/published.h, fitted on the split "fit" entries only),
// for bench/predict-published.sh. Prints one JSON line per measurement, then a table per
// split, phase and device class: how many could be predicted, median |error|, the share
// inside the printed interval, the interval's median width (high / low - 1).
//
// usage: predict_published DATA_DIR [--rows]
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "predict/catalogue.h"
#include "predict/published.h"

namespace cat = edgeprobe::predict::catalogue;
namespace pub = edgeprobe::predict::published;

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Cell {
  int total = 0, predicted = 0, inside = 0;
  std::vector<double> abs_err, width;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: predict_published DATA_DIR [--rows]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool rows = argc > 2 && std::string(argv[2]) == "--rows";
  try {
    const auto catalogue = cat::load(dir + "/devices.json", dir + "/measurements.json");
    const auto calibration = pub::fit(catalogue);
    // split -> phase -> class (and "all") -> cell
    std::map<std::string, std::map<std::string, std::map<std::string, Cell>>> table;
    for (const auto& m : catalogue.measurements) {
      const auto& cls = catalogue.devices.at(m.device).device_class;
      std::string why;
      const auto q = pub::query_of(catalogue, m, &why);
      pub::Answer a;
      if (q) a = pub::predict(calibration, *q);
      for (const std::string& key : {cls, std::string("all")}) {
        Cell& c = table[m.split][m.phase][key];
        ++c.total;
        if (a.value <= 0) continue;
        ++c.predicted;
        c.abs_err.push_back(std::abs(m.tokens_per_s / a.value - 1));
        c.inside += m.tokens_per_s >= a.low && m.tokens_per_s <= a.high;
        c.width.push_back(a.high / a.low - 1);
      }
      if (rows) {
        nlohmann::json j = {{"id", m.id},
                            {"split", m.split},
                            {"device", m.device},
                            {"class", cls},
                            {"backend", m.backend},
                            {"phase", m.phase},
                            {"threads", m.threads ? nlohmann::json(*m.threads) : nlohmann::json(nullptr)},
                            {"measured", m.tokens_per_s}};
        if (a.value > 0) {
          j["predicted"] = a.value;
          j["low"] = a.low;
          j["high"] = a.high;
          j["error"] = m.tokens_per_s / a.value - 1;
          j["bound"] = a.bound;
          j["thin"] = a.thin;
        } else {
          j["unavailable"] = q ? (a.notes.empty() ? std::string("?") : a.notes.front()) : why;
        }
        std::printf("%s\n", j.dump().c_str());
      }
    }
    std::printf(
        "| split | phase | class | predicted / measurements | median abs error | inside interval | median "
        "width (high/low - 1) |\n");
    std::printf("|---|---|---|---:|---:|---:|---:|\n");
    for (const std::string split : {"fit", "validation"})
      for (const std::string phase : {"decode", "prefill"}) {
        auto& by_class = table[split][phase];
        std::vector<std::string> keys;
        for (const auto& [k, _] : by_class)
          if (k != "all") keys.push_back(k);
        keys.push_back("all");
        for (const auto& k : keys) {
          const Cell& c = by_class[k];
          if (c.predicted == 0) {
            std::printf("| %s | %s | %s | 0 / %d | - | - | - |\n", split.c_str(), phase.c_str(), k.c_str(),
                        c.total);
            continue;
          }
          std::printf("| %s | %s | %s | %d / %d | %.1f %% | %.0f %% (%d) | %.0f %% |\n", split.c_str(),
                      phase.c_str(), k == "all" ? "**all**" : k.c_str(), c.predicted, c.total,
                      100 * median(c.abs_err), 100.0 * c.inside / c.predicted, c.inside,
                      100 * median(c.width));
        }
      }
    std::printf("\nfit entries not used (%zu of %zu):\n", calibration.skipped.size(),
                calibration.fit_entries);
    for (const auto& s : calibration.skipped) std::printf("  %s\n", s.c_str());
  } catch (const edgeprobe::Error& e) {
    std::fprintf(stderr, "predict_published: %s\n", e.what());
    return 2;
  }
  return 0;
}
