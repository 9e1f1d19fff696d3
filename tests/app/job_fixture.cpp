#include "app/job_fixture.h"

#include <fmt/format.h>

#include "model/synth.h"

namespace edgeprobe::app_test {

using nlohmann::json;

app::JobContext fake_context(std::shared_ptr<engine::FakeEngine> fake, store::Store* store,
                             app::JobSink* sink, StopToken stop) {
  app::JobContext ctx;
  ctx.store = store;
  ctx.sink = sink;
  ctx.command_line = "app_tests";
  ctx.stop = std::move(stop);
  ctx.engine = [fake](const app::Environment&) {
    return app::engine_handle(std::make_unique<BorrowedEngine>(fake));
  };
  return ctx;
}

void RecordingSink::count_unit() {
  if (stop_after > 0 && ++seen_ == stop_after) stop.request_stop();
}

void RecordingSink::bench_repetition(size_t case_index, const workload::TestCase&,
                                     const result::Repetition& rep) {
  repetitions.emplace_back(case_index, rep.index);
  count_unit();
}

void RecordingSink::session_turn(size_t config_index, const result::Turn& turn) {
  turns.push_back({{"config", config_index},
                   {"round", turn.round},
                   {"conversation", turn.conversation_id},
                   {"turn", turn.turn_index}});
  count_unit();
}

test_support::TempDir* JobTest::shared_ = nullptr;

void JobTest::SetUpTestSuite() {
  shared_ = new test_support::TempDir();
  model::SynthOptions o;
  o.shape = model::named_shape("tiny");
  o.quant = "f16";  // no quantizer pass: the quickest to write
  o.output_path = shared_->file("tiny-f16.gguf");
  model::synthesize_model(o);
  test_support::write_file(shared_->file("conversations.jsonl"),
                           "{\"id\": \"c1\", \"lang\": \"en\", \"turns\": [\"hi\", \"how are you\"]}\n"
                           "{\"id\": \"c2\", \"lang\": \"en\", \"turns\": [\"bye\"]}\n");
}

void JobTest::TearDownTestSuite() {
  delete shared_;
  shared_ = nullptr;
}

void JobTest::SetUp() {
  engine::FakeScript script;
  script.reply = "ok ";
  fake_ = std::make_shared<engine::FakeEngine>(script);
  dir_ = std::make_unique<test_support::TempDir>();
}

std::string JobTest::model_path() { return shared_->file("tiny-f16.gguf"); }
std::string JobTest::prompts_path() { return shared_->file("conversations.jsonl"); }

app::BenchPlan JobTest::bench_plan(int repetitions) const {
  app::BenchPlan plan;
  plan.sweep.models = {model_path()};
  plan.sweep.n_prompt = {8, 16};
  plan.sweep.n_gen = {0};
  plan.sweep.threads = {1};
  plan.run.repetitions = repetitions;
  plan.run.warmup = false;
  plan.env.sample_hz = 0;  // no sampler thread: nothing here reads telemetry
  plan.ceilings = "off";   // the ceilings probe runs llama.cpp kernels
  return plan;
}

app::SessionPlan JobTest::session_plan() const {
  app::SessionPlan plan;
  plan.models = {model_path()};
  plan.n_ctx = {256};
  plan.max_tokens = {4};
  plan.threads = {1};
  plan.options.rounds = 1;
  plan.options.conversations = 2;
  plan.prompts = prompts_path();
  plan.env.sample_hz = 0;
  return plan;
}

json comparable_run(const store::Store& store, store::RunId run) {
  json doc = store.load_run(run);
  doc["run"].erase("id");
  doc["run"].erase("created_at");
  doc["run"].erase("finished_at");
  auto& provenance = doc["run"]["provenance"];
  if (provenance.contains("extra")) {
    provenance["extra"].erase("lab");
    if (provenance["extra"].empty()) provenance.erase("extra");  // the lab's note was all it held
  }
  for (auto& c : doc["configurations"])
    for (auto& r : c["repetitions"]) r.erase("recorded_at");
  for (auto& t : doc["turns"]) t.erase("recorded_at");
  return doc;
}

std::vector<std::string> differing_paths(const json& a, const json& b) {
  std::vector<std::string> paths;
  for (const auto& op : json::diff(a, b)) paths.push_back(op["path"].get<std::string>());
  return paths;
}

}  // namespace edgeprobe::app_test
