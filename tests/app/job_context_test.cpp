// The job context's defaults are what the CLI gets (it builds contexts without naming
// these fields): the plan's own engine, and the process's stop token, which Ctrl-C sets.
#include <gtest/gtest.h>

#include <csignal>

#include "app/job.h"
#include "core/stop_token.h"

namespace edgeprobe {
namespace {

TEST(StopToken, CopiesShareOneFlagAndTokensMadeApartDoNot) {
  const StopToken a;
  const StopToken copy = a;
  const StopToken other;
  EXPECT_FALSE(a.stop_requested());
  copy.request_stop();
  EXPECT_TRUE(a.stop_requested());
  EXPECT_FALSE(other.stop_requested());
  a.reset();
  EXPECT_FALSE(copy.stop_requested());
}

TEST(JobContext, ByDefaultRunsThePlansEngineAndStopsWithTheProcess) {
  const app::JobContext ctx{nullptr, 0, nullptr, "edgeprobe bench", ""};  // as cmd_bench.cpp builds it
  EXPECT_FALSE(ctx.engine);  // make_engine(plan.env): llama.cpp, or the --endpoint server
  ASSERT_FALSE(ctx.stop.stop_requested());
  // A signal handler that does what main.cpp's does reaches the job.
  auto* previous = std::signal(SIGUSR1, [](int) { request_process_stop(); });
  std::raise(SIGUSR1);
  std::signal(SIGUSR1, previous);
  EXPECT_TRUE(ctx.stop.stop_requested());
  EXPECT_TRUE(StopToken::process().stop_requested());
  EXPECT_FALSE(StopToken().stop_requested());  // a token of its own is not the process's
  StopToken::process().reset();
  EXPECT_FALSE(ctx.stop.stop_requested());
}

}  // namespace
}  // namespace edgeprobe
