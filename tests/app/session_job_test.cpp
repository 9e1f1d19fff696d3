// app::run_session end to end on the fake engine: every turn of every conversation runs
// on the engine the context chose and is stored as it completes; a stop request through
// the context's token ends the session after the turn in flight.
#include "app/session_job.h"

#include "app/job_fixture.h"
#include "app/stored_run.h"

namespace edgeprobe::app_test {
namespace {

using nlohmann::json;

class SessionJob : public JobTest {};

TEST_F(SessionJob, RunsEveryTurnOnTheEngineTheContextChoseAndStoresEach) {
  auto store = store::open_store(db_path("session.db"));
  RecordingSink sink;
  const auto out = app::run_session(session_plan(), fake_context(fake_, store.get(), &sink, sink.stop));

  EXPECT_EQ(out.report.provenance.engine.name, "fake");
  ASSERT_EQ(out.report.configs.size(), 1u);
  const auto& turns = out.report.configs[0].turns;
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_EQ(sink.turns,
            (std::vector<json>{{{"config", 0}, {"round", 0}, {"conversation", "c1"}, {"turn", 0}},
                               {{"config", 0}, {"round", 0}, {"conversation", "c1"}, {"turn", 1}},
                               {{"config", 0}, {"round", 0}, {"conversation", "c2"}, {"turn", 0}}}));
  for (const auto& turn : turns) {
    const json t = result::to_json(turn);  // as it is stored and streamed
    EXPECT_TRUE(t["error"].is_null()) << t.dump();
    EXPECT_EQ(t["stop_reason"], "max_tokens");  // the fake's reply never ends by itself
    EXPECT_EQ(t["generated_tokens"], 4);
    EXPECT_EQ(t["reply"], "ok o");
  }
  // Each conversation starts from an empty cache; its second turn prefills only the new text.
  EXPECT_EQ(fake_->counters().prefills, 3);
  EXPECT_LT(turns[1].prompt_tokens, turns[1].context_tokens);
  EXPECT_EQ(sink.last_units, (std::pair<size_t, size_t>{3, 3}));
  EXPECT_TRUE(sink.ended);
  EXPECT_FALSE(out.outcome.interrupted);
  EXPECT_EQ(out.outcome.exit_code, 0);

  const auto stored = app::load_stored_run(*store, out.outcome.run_id);
  EXPECT_EQ(stored.record.status, "complete");
  ASSERT_TRUE(stored.session());
  ASSERT_EQ(stored.session()->configs.size(), 1u);
  EXPECT_EQ(stored.session()->configs[0].turns, turns);  // as the job measured them
  EXPECT_EQ(stored.session()->configs[0].analysis, out.report.configs[0].analysis);
}

TEST_F(SessionJob, AStopThroughTheContextTokenEndsTheSessionAfterTheTurnInFlight) {
  auto store = store::open_store(db_path("session.db"));
  RecordingSink sink;
  sink.stop_after = 1;
  const auto out = app::run_session(session_plan(), fake_context(fake_, store.get(), &sink, sink.stop));

  EXPECT_TRUE(out.outcome.interrupted);
  ASSERT_EQ(out.report.configs.size(), 1u);
  ASSERT_EQ(out.report.configs[0].turns.size(), 1u);
  EXPECT_EQ(out.report.configs[0].turns[0].stop_reason, "max_tokens");  // finished, not cut
  EXPECT_EQ(fake_->counters().prefills, 1);
  const auto run = store->get_run(out.outcome.run_id);
  EXPECT_EQ(run.status, "failed");
  EXPECT_EQ(run.error, "interrupted");
  EXPECT_FALSE(StopToken::process().stop_requested());
}

}  // namespace
}  // namespace edgeprobe::app_test
