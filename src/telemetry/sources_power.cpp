// Power and energy: battery current, voltage and charge counter, battery power_now,
// RAPL energy counters and INA3221 rails.
#include <string>
#include <vector>

#include "telemetry/sources_internal.h"

namespace edgeprobe::telemetry {
namespace {

using namespace sources;

// ---- power --------------------------------------------------------------------------

class PowerSource : public Source {
 public:
  PowerSource(const FsRoot& fs, const PowerLayout& power) {
    for (const auto& b : power.batteries) {
      if (b.has_power_now) {
        power_now_.push_back({b.name, b.status, CachedFile(fs.path(b.dir + "/status")),
                              CachedFile(fs.path(b.dir + "/power_now"))});
      }
      if (!b.has_current) continue;
      BatteryEntry e;
      e.name = b.name;
      e.current_scale = b.current_scale_to_ua;
      e.voltage_scale = b.voltage_scale_to_uv;
      e.current = CachedFile(fs.path(b.dir + "/current_now"));
      e.status_file = CachedFile(fs.path(b.dir + "/status"));
      e.status = b.status;
      e.has_voltage = b.has_voltage;
      if (b.has_voltage) e.voltage = CachedFile(fs.path(b.dir + "/voltage_now"));
      e.has_charge = b.has_charge_counter;
      if (b.has_charge_counter) e.charge = CachedFile(fs.path(b.dir + "/charge_counter"));
      batteries_.push_back(std::move(e));
    }
    for (const auto& z : power.rapl) {
      RaplEntry e;
      e.label = "rapl:" + z.name + (z.top_level ? "" : "@" + z.id.substr(11));
      e.range_uj = static_cast<double>(z.max_energy_range_uj);
      e.in_total = z.counts_in_total;
      e.file = CachedFile(fs.path(z.energy_path));
      rapl_.push_back(std::move(e));
    }
    for (const auto& r : power.rails) {
      rails_.push_back({r.label, r.counts_in_total, CachedFile(fs.path(r.voltage_path)), CachedFile(fs.path(r.current_path))});
    }
  }
  const char* family() const override { return "power"; }
  void declare(std::vector<SeriesInfo>* series) override {
    auto add = [&](std::string name, Metric metric, std::string group, bool in_total) {
      SeriesInfo info;
      info.name = std::move(name);
      info.metric = metric;
      info.group = std::move(group);
      info.in_total = in_total;
      series->push_back(std::move(info));
    };
    for (const auto& b : batteries_) {
      add(b.name + ".discharge_current_ua", Metric::kDischargeCurrentUa, b.name, false);
      if (b.has_voltage) {
        add(b.name + ".voltage_uv", Metric::kVoltageUv, b.name, false);
        add(b.name + ".power_w", Metric::kPowerW, b.name, true);
      }
      if (b.has_charge) add(b.name + ".charge_counter_uah", Metric::kChargeCounterUah, b.name, false);
    }
    for (const auto& p : power_now_) add(p.name + ".power_w", Metric::kPowerW, p.name, true);
    for (const auto& r : rapl_) add(r.label + ".energy_j", Metric::kEnergyJ, r.label, r.in_total);
    for (const auto& r : rails_) add("ina3221." + r.label + ".power_w", Metric::kPowerW, r.label, r.in_total);
  }
  void sample(double* row, const ReportFn& report) override {
    size_t k = 0;
    size_t flag = 0;
    for (auto& b : batteries_) {
      const std::string_view status = b.status_file.read();
      if (!b.status_file.failed() && status != b.status) b.status.assign(status);
      long long raw = 0;
      double current = kNaN;
      if (b.current.read_int(&raw)) {
        current = discharge_current_ua(raw, b.current_scale, b.status);
      } else {
        once_.report_once(flag, "battery current", b.current, report);
      }
      ++flag;
      row[k++] = current;
      if (b.has_voltage) {
        double voltage = kNaN;
        if (b.voltage.read_int(&raw)) voltage = static_cast<double>(raw) * b.voltage_scale;
        else once_.report_once(flag, "battery voltage", b.voltage, report);
        row[k++] = voltage;
        row[k++] = current * voltage * 1e-12;  // µA x µV -> W; positive while discharging
      }
      ++flag;
      if (b.has_charge) row[k++] = read_or_nan(b.charge, flag, "battery charge_counter", once_, report);
      ++flag;
    }
    for (auto& p : power_now_) {
      const std::string_view status = p.status_file.read();
      if (!p.status_file.failed() && status != p.status) p.status.assign(status);
      long long raw = 0;
      // µW, positive while discharging: the same sign rule as current_now.
      if (p.file.read_int(&raw)) {
        row[k++] = discharge_current_ua(raw, 1, p.status) * 1e-6;
      } else {
        once_.report_once(flag, "battery power_now", p.file, report);
        row[k++] = kNaN;
      }
      ++flag;
    }
    for (auto& r : rapl_) {
      long long raw = 0;
      if (!r.file.read_int(&raw)) {
        once_.report_once(flag++, r.label, r.file, report);
        row[k++] = kNaN;
        continue;
      }
      ++flag;
      const double value = static_cast<double>(raw);
      if (r.have_last) {
        double delta = value - r.last_uj;
        // energy_uj wraps at max_energy_range_uj (powercap.rst); one wrap per interval
        // at most at any sane sampling rate.
        if (delta < 0 && r.range_uj > 0) delta += r.range_uj + 1;
        if (delta >= 0) r.accumulated_uj += delta;
      }
      r.last_uj = value;
      r.have_last = true;
      row[k++] = r.accumulated_uj * 1e-6;
    }
    for (auto& r : rails_) {
      long long mv = 0, ma = 0;
      const bool ok_v = r.voltage.read_int(&mv);
      const bool ok_i = ok_v && r.current.read_int(&ma);
      if (!ok_v || !ok_i) once_.report_once(flag, r.label, ok_v ? r.current : r.voltage, report);
      ++flag;
      row[k++] = ok_v && ok_i ? static_cast<double>(mv) * static_cast<double>(ma) * 1e-6 : kNaN;  // mV x mA -> W
    }
  }

 private:
  struct BatteryEntry {
    std::string name, status;
    double current_scale = 1, voltage_scale = 1;
    bool has_voltage = false, has_charge = false;
    CachedFile current, voltage, charge, status_file;
  };
  struct RaplEntry {
    std::string label;
    double range_uj = 0, last_uj = 0, accumulated_uj = 0;
    bool have_last = false, in_total = false;
    CachedFile file;
  };
  struct RailEntry {
    std::string label;
    bool in_total;
    CachedFile voltage, current;
  };
  struct PowerNowEntry {
    std::string name, status;
    CachedFile status_file, file;
  };
  std::vector<BatteryEntry> batteries_;
  std::vector<PowerNowEntry> power_now_;
  std::vector<RaplEntry> rapl_;
  std::vector<RailEntry> rails_;
  OnceFlags once_;
};

}  // namespace

std::unique_ptr<Source> make_power_source(const FsRoot& fs, const PowerLayout& power) {
  return std::make_unique<PowerSource>(fs, power);
}

}  // namespace edgeprobe::telemetry
