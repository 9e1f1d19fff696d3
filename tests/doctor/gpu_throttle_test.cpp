// The GPU clock findings of check_clock_and_heat on telemetry read from the sysfs
// fixtures (tests/fixtures/sysfs/rk3588-mali, jetson-orin): the phase summary goes into a
// bench result the way a run writes it, and diagnose() reads it back.
#include <gtest/gtest.h>

#include "../telemetry/fixture_util.h"
#include "core/clock.h"
#include "doctor/bench_results.h"
#include "doctor/doctor.h"
#include "doctor/evidence.h"
#include "doctor/finding.h"
#include "telemetry/sampler.h"
#include "telemetry/summary.h"

using namespace edgeprobe;
using namespace edgeprobe::doctor;
using edgeprobe::telemetry::testing::fixture;
using edgeprobe::telemetry::testing::ScratchRoot;
using nlohmann::json;

namespace {

constexpr int64_t kSecond = 1'000'000'000;
const std::string kMaliDevfreq = "/sys/class/devfreq/fb000000.gpu";

// A second of decode sampled on the tree at `root`: its per-phase telemetry JSON.
json decode_telemetry(const std::string& root) {
  telemetry::Sampler sampler({.hz = 10, .sysfs_root = root, .pid = 0}, RunClock());
  sampler.sample_at(0);
  sampler.sample_at(kSecond);
  return telemetry::to_json(telemetry::summarize_phase(sampler.timeline(), 0, kSecond, 32));
}

// A bench report of one tg32 result whose repetition carries that telemetry.
Evidence evidence_with(const json& decode) {
  Evidence e;
  e.options.model_path = "/m/model-q4_0.gguf";
  e.options.config.threads = 2;
  e.options.n_prompt = 128;
  e.options.n_gen = 32;
  e.device.affinity = {0, 1};
  e.primary.report = doctor_test::bench_report({doctor_test::test_result("tg32", 2, 0, 40, {{"decode", decode}})});
  e.primary.report->provenance.models.clear();
  return e;
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const auto& f : findings)
    if (f.id == id) return &f;
  return nullptr;
}

bool any_gpu_finding(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.id.rfind("throttle.gpu_", 0) == 0; });
}

bool evidence_has(const Finding& f, const std::string& needle) {
  return std::any_of(f.evidence.begin(), f.evidence.end(),
                     [&](const std::string& line) { return line.find(needle) != std::string::npos; });
}

}  // namespace

TEST(GpuThrottle, ABusyMaliHeldAtItsLowestClockIsNamed) {
  // The fixture's Mali: 37 % busy at 300 of its 1000 MHz, 44 °C, no cap.
  const auto findings = diagnose(evidence_with(decode_telemetry(fixture("rk3588-mali"))));
  const Finding* f = find(findings, "throttle.gpu_clock");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(find(findings, "throttle.gpu_thermal"), nullptr);
  ASSERT_TRUE(f->speedup.has_value());
  EXPECT_NEAR(*f->speedup, 1000.0 / 300.0, 1e-9);  // max clock over mean clock
  EXPECT_EQ(f->speedup_basis.rfind("estimated:", 0), 0u);
  EXPECT_TRUE(evidence_has(*f, "GPU fb000000.gpu (mali) was busy 37")) << f->evidence.front();
  EXPECT_TRUE(evidence_has(*f, "30 % of its 1000 MHz")) << f->evidence.front();
  EXPECT_TRUE(evidence_has(*f, "governor 'simple_ondemand'"));
  EXPECT_EQ(f->data.value("gpu", ""), "fb000000.gpu");
  EXPECT_NE(f->fix.find("governor"), std::string::npos);
}

TEST(GpuThrottle, HeatMakesItThermal) {
  ScratchRoot root("gpu-hot");
  root.overlay(fixture("rk3588-mali"));
  root.write("/sys/class/thermal/thermal_zone5/temp", "86000");  // gpu-thermal
  const auto findings = diagnose(evidence_with(decode_telemetry(root.path())));
  const Finding* f = find(findings, "throttle.gpu_thermal");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(find(findings, "throttle.gpu_clock"), nullptr);
  EXPECT_NE(f->title.find("86 °C"), std::string::npos) << f->title;
  EXPECT_TRUE(evidence_has(*f, "GPU temperature up to 86.0 °C"));
}

TEST(GpuThrottle, ACapWithoutHeatIsThermalToo) {
  // devfreq max_freq lowered below the top of available_frequencies: a thermal or QoS cap.
  ScratchRoot root("gpu-capped");
  root.overlay(fixture("rk3588-mali"));
  root.write(kMaliDevfreq + "/max_freq", "500000000");
  const auto findings = diagnose(evidence_with(decode_telemetry(root.path())));
  const Finding* f = find(findings, "throttle.gpu_thermal");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(evidence_has(*f, "capped to 50 %"));
  EXPECT_NEAR(f->data.value("min_cap_share", 0.0), 0.5, 1e-9);
}

TEST(GpuThrottle, QuietWhenTheGpuIsIdleOrAtItsClock) {
  // Idle: a low clock is what the governor should pick.
  ScratchRoot idle("gpu-idle");
  idle.overlay(fixture("rk3588-mali"));
  idle.write(kMaliDevfreq + "/load", "10@300000000Hz");
  EXPECT_FALSE(any_gpu_finding(diagnose(evidence_with(decode_telemetry(idle.path())))));
  // Busy at its top clock.
  ScratchRoot fast("gpu-fast");
  fast.overlay(fixture("rk3588-mali"));
  fast.write(kMaliDevfreq + "/cur_freq", "1000000000");
  fast.write(kMaliDevfreq + "/load", "95@1000000000Hz");
  EXPECT_FALSE(any_gpu_finding(diagnose(evidence_with(decode_telemetry(fast.path())))));
  // The Jetson fixture (37 % busy at 612 of 625 MHz) and the phone's Adreno (37 % at 615
  // of 680 MHz) run near their maximum.
  EXPECT_FALSE(any_gpu_finding(diagnose(evidence_with(decode_telemetry(fixture("jetson-orin"))))));
  EXPECT_FALSE(any_gpu_finding(diagnose(evidence_with(decode_telemetry(fixture("android-phone-3cluster"))))));
  // No GPU in the telemetry at all.
  EXPECT_FALSE(any_gpu_finding(diagnose(evidence_with(decode_telemetry(fixture("x86-laptop-hybrid-rapl"))))));
}

TEST(GpuThrottle, JetsonEvidenceNamesTheSharedRail) {
  ScratchRoot root("jetson-slow");
  root.overlay(fixture("jetson-orin"));
  root.write("/sys/class/devfreq/17000000.gpu/cur_freq", "306000000");
  root.write("/sys/class/devfreq/17000000.gpu/device/load", "800");
  const auto findings = diagnose(evidence_with(decode_telemetry(root.path())));
  const Finding* f = find(findings, "throttle.gpu_clock");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(evidence_has(*f, "power rail VDD_CPU_GPU_CV (shared with the CPU and the CV engines)"));
  EXPECT_TRUE(evidence_has(*f, "governor 'nvhost_podgov'"));
  EXPECT_NE(f->fix.find("jetson_clocks"), std::string::npos);
  EXPECT_NEAR(*f->speedup, 625.0 / 306.0, 1e-9);
}
