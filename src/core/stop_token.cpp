#include "core/stop_token.h"

namespace edgeprobe {
namespace {

// A signal handler may touch only a lock-free atomic; constinit: it exists before main,
// so a signal that comes early finds it.
static_assert(std::atomic<bool>::is_always_lock_free);
constinit std::atomic<bool> g_process_stop{false};
constinit std::atomic<bool> g_process_stop_now{false};
static_assert(std::atomic<int>::is_always_lock_free);
constinit std::atomic<int> g_watchers{0};  // live ProcessStopWatch objects

}  // namespace

StopToken StopToken::process() {
  // Non-owning (aliasing an empty owner): the flag has static storage and outlives every token.
  return StopToken(std::shared_ptr<std::atomic<bool>>(std::shared_ptr<void>(), &g_process_stop));
}

void request_process_stop() noexcept { g_process_stop.store(true); }

void request_process_stop_now() noexcept {
  g_process_stop.store(true);
  g_process_stop_now.store(true);
}

bool process_stop_now_requested() noexcept { return g_process_stop_now.load(); }

ProcessStopWatch::ProcessStopWatch() noexcept { g_watchers.fetch_add(1); }
ProcessStopWatch::~ProcessStopWatch() { g_watchers.fetch_sub(1); }
bool process_stop_watched() noexcept { return g_watchers.load() > 0; }

}  // namespace edgeprobe
