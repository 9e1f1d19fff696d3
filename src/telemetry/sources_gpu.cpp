// GPU clock and busy share (kgsl, devfreq), and the slower cap and temperature.
#include <string>
#include <vector>

#include "telemetry/sources_internal.h"

namespace edgeprobe::telemetry {
namespace {

using namespace sources;

double max_hz_of(const Gpu& gpu) { return gpu.max_hz ? static_cast<double>(*gpu.max_hz) : kNaN; }

// One GPU file and how to turn it into the series' unit.
struct Reading {
  std::string series, what;
  Metric metric = Metric::kGpuFreqHz;
  size_t gpu = 0;
  std::string group;
  double reference = kNaN;
  GpuBusyFormat busy = GpuBusyFormat::kNone;  // kNone: an integer (Hz, raw temperature)
  double divisor = 1;
  CachedFile file;
};

// A GPU file that stops parsing (a driver update, a node that went away) is one line.
void report_malformed(const Reading& r, std::string_view text, std::vector<bool>* reported, size_t i,
                      const ReportFn& report) {
  if ((*reported)[i]) return;
  (*reported)[i] = true;
  report(r.what + ": unavailable: " + r.file.path() + " malformed: '" + std::string(text) + "'");
}

class GpuSource : public Source {
 public:
  GpuSource(const char* family, double max_hz, std::vector<Reading> readings)
      : family_(family),
        max_hz_(max_hz),
        readings_(std::move(readings)),
        malformed_(readings_.size(), false) {}
  const char* family() const override { return family_; }
  double max_hz() const override { return max_hz_; }
  void declare(std::vector<SeriesInfo>* series) override {
    for (const auto& r : readings_) {
      series->push_back({.name = r.series,
                         .metric = r.metric,
                         .group = r.group,
                         .index = static_cast<int>(r.gpu),
                         .reference = r.reference});
    }
  }
  void sample(double* row, const ReportFn& report) override {
    for (size_t i = 0; i < readings_.size(); ++i) row[i] = read_one(i, report);
  }

 private:
  double read_one(size_t i, const ReportFn& report) {
    Reading& r = readings_[i];
    const std::string_view text = r.file.read();
    if (r.file.failed()) {
      once_.report_once(i, r.what, r.file, report);
      return kNaN;
    }
    if (r.busy != GpuBusyFormat::kNone) {
      if (const auto share = parse_gpu_busy(text, r.busy)) return *share;
      report_malformed(r, text, &malformed_, i, report);
      return kNaN;
    }
    long long raw = 0;
    if (parse_ll(text, &raw)) return static_cast<double>(raw) / r.divisor;
    report_malformed(r, text, &malformed_, i, report);
    return kNaN;
  }

  const char* family_;
  double max_hz_;
  std::vector<Reading> readings_;
  std::vector<bool> malformed_;
  OnceFlags once_;
};

Reading reading(const FsRoot& fs, const Gpu& gpu, size_t index, const char* suffix, Metric metric,
                const std::string& path, const char* what) {
  Reading r;
  r.series = "gpu." + gpu.name + "." + suffix;
  r.what = "gpu " + gpu.name + " " + what;
  r.metric = metric;
  r.gpu = index;
  r.group = gpu.name;
  r.file = CachedFile(fs.path(path));
  return r;
}

}  // namespace

// Clock and busy share move with every frame of work; the drivers average busy over
// windows of tens of milliseconds (kgsl, devfreq polling), so 10 Hz sees every change.
std::unique_ptr<Source> make_gpu_source(const FsRoot& fs, const GpuLayout& layout) {
  std::vector<Reading> readings;
  for (size_t g = 0; g < layout.gpus.size(); ++g) {
    const Gpu& gpu = layout.gpus[g];
    if (!gpu.freq_path.empty()) {
      readings.push_back(reading(fs, gpu, g, "freq_hz", Metric::kGpuFreqHz, gpu.freq_path, "clock"));
      readings.back().reference = max_hz_of(gpu);
    }
    if (!gpu.busy_path.empty()) {
      readings.push_back(reading(fs, gpu, g, "busy_share", Metric::kGpuBusyShare, gpu.busy_path, "busy"));
      readings.back().busy = gpu.busy_format;
    }
  }
  return std::make_unique<GpuSource>("gpu", 10, std::move(readings));
}

// The cap follows the thermal governor's poll and a die heats over seconds: 5 Hz, as the
// cpufreq caps and thermal zones.
std::unique_ptr<Source> make_gpu_slow_source(const FsRoot& fs, const GpuLayout& layout) {
  std::vector<Reading> readings;
  for (size_t g = 0; g < layout.gpus.size(); ++g) {
    const Gpu& gpu = layout.gpus[g];
    if (!gpu.cap_path.empty()) {
      readings.push_back(reading(fs, gpu, g, "cap_hz", Metric::kGpuCapHz, gpu.cap_path, "clock cap"));
      readings.back().reference = max_hz_of(gpu);
    }
    if (!gpu.temp_path.empty()) {
      readings.push_back(reading(fs, gpu, g, "temp_c", Metric::kGpuTempC, gpu.temp_path, "temp"));
      readings.back().divisor = gpu.temp_divisor;
    }
  }
  return std::make_unique<GpuSource>("gpu cap", 5, std::move(readings));
}

}  // namespace edgeprobe::telemetry
