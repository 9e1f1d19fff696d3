// A run stopped through its token and resumed from the store (--resume): the units the
// first attempt stored are neither run again nor rewritten, the rest run once, and the
// run ends complete.
#include <fmt/format.h>

#include <map>

#include "app/bench_job.h"
#include "app/job_fixture.h"
#include "app/session_job.h"
#include "app/stored_run.h"
#include "core/error.h"

namespace edgeprobe::app_test {
namespace {

using nlohmann::json;

class Resume : public JobTest {};

// Every stored unit of a run by its key: repetitions by "case/repetition", turns by
// "config/round/conversation/turn", with the result JSON it was stored with.
std::map<std::string, json> stored_units(const store::Store& store, store::RunId run) {
  std::map<std::string, json> units;
  const json doc = store.load_run(run);
  for (const auto& c : doc["configurations"])
    for (const auto& r : c["repetitions"])
      units[fmt::format("{}/{}", c["ordinal"].get<int>(), r["ordinal"].get<int>())] = r["result"];
  for (const auto& t : doc["turns"])
    units[fmt::format("{}/{}/{}/{}", t["configuration_ordinal"].get<int>(), t["round"].get<int>(),
                      t["conversation_id"].get<std::string>(), t["turn_index"].get<int>())] = t["result"];
  return units;
}

TEST_F(Resume, ABenchRunStoppedThroughItsTokenRunsOnlyTheMissingRepetitions) {
  auto store = store::open_store(db_path("resume.db"));
  RecordingSink first;
  first.stop_after = 4;  // pp8's three and pp16's first
  const auto stopped = app::run_bench(bench_plan(3), fake_context(fake_, store.get(), &first, first.stop));
  ASSERT_TRUE(stopped.outcome.interrupted);
  const auto before = stored_units(*store, stopped.outcome.run_id);
  ASSERT_EQ(before.size(), 4u);

  // As `bench --resume RUN` does: the stored plan, a fresh engine and process.
  auto fresh = std::make_shared<engine::FakeEngine>();
  RecordingSink second;
  auto ctx = fake_context(fresh, store.get(), &second, second.stop);
  ctx.resume_run = stopped.outcome.run_id;
  const auto resumed = app::run_bench(app::stored_bench_plan(*store, ctx.resume_run), ctx);

  EXPECT_FALSE(resumed.outcome.interrupted);
  EXPECT_EQ(resumed.outcome.run_id, stopped.outcome.run_id);
  // Only pp16's last two ran: no stored repetition was measured again.
  EXPECT_EQ(second.repetitions, (std::vector<std::pair<size_t, int>>{{1, 1}, {1, 2}}));
  EXPECT_EQ(fresh->counters().prefill_sizes, (std::vector<int>{16, 16}));
  // Progress starts from what was stored.
  EXPECT_EQ(second.last_units, (std::pair<size_t, size_t>{6, 6}));
  ASSERT_EQ(resumed.report.results.size(), 2u);
  for (const auto& r : resumed.report.results) EXPECT_EQ(r.repetitions.size(), 3u);

  const auto after = stored_units(*store, stopped.outcome.run_id);
  EXPECT_EQ(after.size(), 6u);
  for (const auto& [key, result] : before) EXPECT_EQ(after.at(key), result) << key << " was rewritten";
  EXPECT_EQ(store->get_run(stopped.outcome.run_id).status, "complete");
  EXPECT_EQ(store->get_run(stopped.outcome.run_id).error, "");
}

TEST_F(Resume, ASessionStoppedThroughItsTokenRunsOnlyTheMissingTurns) {
  auto store = store::open_store(db_path("resume.db"));
  RecordingSink first;
  first.stop_after = 1;  // c1's first turn
  const auto stopped = app::run_session(session_plan(), fake_context(fake_, store.get(), &first, first.stop));
  ASSERT_TRUE(stopped.outcome.interrupted);
  const auto before = stored_units(*store, stopped.outcome.run_id);
  ASSERT_EQ(before.size(), 1u);

  auto fresh = std::make_shared<engine::FakeEngine>();
  RecordingSink second;
  auto ctx = fake_context(fresh, store.get(), &second, second.stop);
  ctx.resume_run = stopped.outcome.run_id;
  const auto resumed = app::run_session(app::stored_session_plan(*store, ctx.resume_run), ctx);

  EXPECT_FALSE(resumed.outcome.interrupted);
  // The stored turn is replayed into the cache untimed, not measured or handed on again.
  EXPECT_EQ(second.turns,
            (std::vector<json>{{{"config", 0}, {"round", 0}, {"conversation", "c1"}, {"turn", 1}},
                               {{"config", 0}, {"round", 0}, {"conversation", "c2"}, {"turn", 0}}}));
  EXPECT_EQ(second.last_units, (std::pair<size_t, size_t>{3, 3}));
  const auto after = stored_units(*store, stopped.outcome.run_id);
  EXPECT_EQ(after.size(), 3u);
  for (const auto& [key, result] : before) EXPECT_EQ(after.at(key), result) << key << " was rewritten";
  const auto run = app::load_stored_run(*store, stopped.outcome.run_id);
  EXPECT_EQ(run.record.status, "complete");
  ASSERT_TRUE(run.session());
  EXPECT_EQ(run.session()->configs[0].turns.size(), 3u);
}

TEST_F(Resume, ACompleteRunIsNotResumable) {
  auto store = store::open_store(db_path("resume.db"));
  RecordingSink sink;
  const auto done = app::run_bench(bench_plan(1), fake_context(fake_, store.get(), &sink, sink.stop));
  try {
    app::stored_bench_plan(*store, done.outcome.run_id);
    ADD_FAILURE() << "a complete run was offered for resuming";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
  }
}

}  // namespace
}  // namespace edgeprobe::app_test
