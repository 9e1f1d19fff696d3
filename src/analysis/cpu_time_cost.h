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

// The same contention on threads that meet at ggml's barriers: the team advances only while
// every one of its threads is on a CPU, so with each thread running a fair share 1 / c of
// the time (c = contention_cost), independently of the others, it advances (1 / c)^t of it:
// the cost is c^t, t the threads that need a CPU. It lies between c (descheduling that always
// overlaps) and 1 / (1 - t (1 - 1 / c)) (descheduling that never does), so it never exceeds
// what the others' CPU time can physically cost the team; for one thread it is c.
// (12-08, 60 MB q4_0, 2 threads on 2 CPUs beside one busy loop that got 0.60-0.65 CPUs:
// measured alone x0.577 in prefill and x0.515 in decode; c^2 says x0.59 and x0.57, c x0.77.)
double lockstep_contention_cost(double threads, double usable_cpus, double other_cpus);

// A cgroup quota of `quota_cpus` CPUs against the CPUs the threads need (threads, at most
// the usable CPUs): the need over the quota, never below 1. 1 when an input is not positive.
double quota_cost(double threads, double usable_cpus, double quota_cpus);

// Time throttled (or stolen) over wall time, as a slowdown 1 / (1 - share), with the share
// held below 0.9 so that a counter read at a phase edge cannot make it unbounded.
double lost_time_cost(double share);

}  // namespace edgeprobe::analysis
