#pragma once
// What CPU time taken from a run can cost it, from the CPU time that was taken: one model
// for doctor's estimates and explain's, each bounded by what its cause can physically take.
// docs/explain.md, "Estimates and their bounds".

namespace edgeprobe::analysis {

// Other processes kept `other_cpus` CPUs busy on average (a share of CPU time times the
// CPUs it is a share of). A run of `threads` threads on `usable_cpus` CPUs loses only what
// the others take beyond the CPUs its threads leave idle: with fair sharing, the threads
// and the others split the usable CPUs, so the cost is (threads + others) / CPUs, never
// below 1. Others counted on more CPUs than the run may use are held to those it may use.
// Oversubscribed threads need no more than the usable CPUs. 1 when an input is not
// positive.
double contention_cost(double threads, double usable_cpus, double other_cpus);

// A cgroup quota of `quota_cpus` CPUs against the CPUs the threads need (threads, at most
// the usable CPUs): the need over the quota, never below 1. 1 when an input is not positive.
double quota_cost(double threads, double usable_cpus, double quota_cpus);

// Time throttled (or stolen) over wall time, as a slowdown 1 / (1 - share), with the share
// held below 0.9 so that a counter read at a phase edge cannot make it unbounded.
double lost_time_cost(double share);

}  // namespace edgeprobe::analysis
