#pragma once
#include <span>
#include <vector>

namespace edgeprobe::stats {

// Summary of raw samples, all in double (llama-bench's integer stddev overflows past
// ~1.9 s samples; see research notes). Median first: it is what we report first.
struct Summary {
  size_t n = 0;
  double median = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n-1); 0 when n < 2
  double min = 0;
  double max = 0;
  double p25 = 0;
  double p75 = 0;
  double iqr() const { return p75 - p25; }
};

// Linear interpolation between closest ranks (type 7 of Hyndman & Fan, numpy's default).
// q in [0,1]. Empty input gives 0.
double quantile(std::span<const double> values, double q);
double quantile_sorted(std::span<const double> sorted, double q);
double mean(std::span<const double> values);
double stddev(std::span<const double> values);  // two-pass, sample (n-1)
Summary summarize(std::span<const double> values);

// Latency tail for per-token series.
struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Percentiles percentiles(std::span<const double> values);

}  // namespace edgeprobe::stats
