#pragma once
#include <optional>

namespace edgeprobe::platform {

// One rule for sysfs temperatures, for the telemetry sampler and the lab's device probe.
// Guess the unit of a reading from its magnitude: millidegrees (the ABI) unless the value
// only makes sense as whole or tenth degrees.
inline double guess_temp_divisor(long long raw) {
  const long long magnitude = raw < 0 ? -raw : raw;
  if (magnitude >= 1000) return 1000;  // millidegrees, the ABI
  if (magnitude >= 200) return 10;     // 200..999: tenths of a degree (20.0..99.9 C)
  return 1;                            // 0..199: whole degrees
}

// Raw thermal reading -> degrees C by the unit the zone was found to use.
inline double normalise_temp_c(long long raw, double divisor) { return static_cast<double>(raw) / divisor; }

// A single reading in degrees C, or nullopt when no unit makes it a temperature a device
// runs at: some zones report garbage (-273000, or a sensor's error code).
inline std::optional<double> plausible_temp_c(long long raw) {
  const double c = normalise_temp_c(raw, guess_temp_divisor(raw));
  if (c <= -40 || c >= 150) return std::nullopt;
  return c;
}

}  // namespace edgeprobe::platform
