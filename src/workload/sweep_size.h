#pragma once
// How big a sweep may be: apart from sweep.h, which nearly every file includes.
#include <cstdint>
#include <initializer_list>

#include "workload/sweep.h"

namespace edgeprobe::workload {

// The most tests one sweep may expand to: each list is capped on its own (parse_int_list),
// but their cross product multiplies, and 10^8 tests would be held in memory and never
// finish. expand() refuses a sweep over the bound with its size, before anything runs.
inline constexpr uint64_t kMaxSweepTests = 10000;

// How many tests the cross product holds, computed without overflow: a product past
// UINT64_MAX reads as UINT64_MAX.
uint64_t test_count(const SweepSpec& spec);
// The product of list sizes, saturating at UINT64_MAX (a session's configurations too).
uint64_t saturating_product(std::initializer_list<uint64_t> sizes);

}  // namespace edgeprobe::workload
