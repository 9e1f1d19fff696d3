// Plans are data: one validation, one set of defaults, one JSON form that round-trips and
// reads the plans earlier versions stored.
#include <gtest/gtest.h>

#include "app/plan.h"
#include "core/error.h"
#include "support/run_process.h"

using namespace edgeprobe;
using nlohmann::json;

namespace {

ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kBug;  // did not throw: the caller's EXPECT fails on this
}


}  // namespace

TEST(BenchPlan, DefaultsAreLlamaBenchs) {
  app::BenchPlan plan;
  app::validate(plan, 4);
  ASSERT_EQ(plan.cases.size(), 2u);  // pp512 and tg128 on the built-in model
  EXPECT_EQ(plan.cases[0].name(), "pp512");
  EXPECT_EQ(plan.cases[1].name(), "tg128");
  EXPECT_EQ(plan.cases[0].n_threads, 4);
  EXPECT_EQ(plan.cases[0].model_path, "");
  EXPECT_EQ(plan.run.repetitions, 5);
}

TEST(BenchPlan, JsonRoundTripsBothAsSweepAndAsCases) {
  app::BenchPlan plan;
  plan.sweep.n_prompt = {64, 128};
  plan.sweep.n_gen = {0};
  plan.sweep.threads = {1, 2};
  plan.run.repetitions = 3;
  plan.env.cpu_variant = "sse42";
  const json as_sweep = app::to_json(plan);
  EXPECT_TRUE(as_sweep.contains("sweep"));
  auto back = app::bench_plan_from_json(as_sweep);
  EXPECT_EQ(app::to_json(back), as_sweep);

  app::validate(plan, 2);
  const json as_cases = app::to_json(plan);
  ASSERT_TRUE(as_cases.contains("cases"));
  EXPECT_EQ(as_cases["cases"].size(), 4u);
  auto again = app::bench_plan_from_json(as_cases);
  app::validate(again, 2);
  EXPECT_EQ(app::to_json(again), as_cases);
  EXPECT_EQ(again.env.cpu_variant, "sse42");
}

TEST(BenchPlan, ReadsThePlanThatVersion1Stored) {
  // What `bench` stored with every run before plans were data (store schema 1).
  const json stored = json::parse(R"({"kind":"bench","cases":[{"model_path":"/m.gguf","config":{
      "n_prompt":0,"n_gen":4,"n_depth":0,"n_threads":2,"cpu_mask":"","cpu_strict":false,"poll":50,
      "n_batch":2048,"n_ubatch":512,"flash_attn":-1,"type_k":"f16","type_v":"f16","use_mmap":true}}],
      "repetitions":2,"delay_s":0.0,"warmup":false,"seed":42})");
  auto plan = app::bench_plan_from_json(stored);
  app::validate(plan, 8);
  ASSERT_EQ(plan.cases.size(), 1u);
  EXPECT_EQ(plan.cases[0].name(), "tg4");
  EXPECT_EQ(plan.cases[0].n_threads, 2);
  EXPECT_EQ(plan.run.repetitions, 2);
  EXPECT_FALSE(plan.run.warmup);
}

TEST(BenchPlan, BadValuesNameTheFlag) {
  auto with = [](auto change) {
    return [change] {
      app::BenchPlan plan;
      change(plan);
      app::validate(plan, 2);
    };
  };
  EXPECT_EQ(kind_of(with([](app::BenchPlan& p) { p.run.repetitions = 0; })), ErrorKind::kBadInput);
  EXPECT_NE(test_support::error_message(with([](app::BenchPlan& p) { p.sweep.threads = {0}; })).find("-t 0"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::BenchPlan& p) { p.sweep.n_prompt = {-1}; })).find("-p -1"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::BenchPlan& p) { p.ceilings = "sometimes"; })).find("--ceilings"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::BenchPlan& p) { p.env.sample_hz = -1; })).find("--sample-hz"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::BenchPlan& p) { p.sweep.type_k = {"q9_9"}; })).find("q9_9"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::BenchPlan& p) {
              p.sweep.n_prompt = {0};
              p.sweep.n_gen = {0};
            })).find("nothing to run"),
            std::string::npos);
}

TEST(BenchPlan, HostileJsonIsBadInputNamingTheKey) {
  EXPECT_NE(test_support::error_message([] { app::bench_plan_from_json({{"kind", "bench"}, {"repetitons", 3}}); }).find("'repetitons'"),
            std::string::npos);
  EXPECT_NE(test_support::error_message([] { app::bench_plan_from_json({{"kind", "bench"}, {"repetitions", "three"}}); }).find("'repetitions'"),
            std::string::npos);
  EXPECT_EQ(kind_of([] { app::bench_plan_from_json({{"kind", "bench"}, {"sweep", {{"n_prompt", {1, "x"}}}}}); }),
            ErrorKind::kBadInput);
  EXPECT_EQ(kind_of([] { app::bench_plan_from_json({{"kind", "bench"}, {"cases", {{{"model_path", 1}}}}}); }),
            ErrorKind::kBadInput);
  EXPECT_EQ(kind_of([] { app::plan_kind(json::array()); }), ErrorKind::kBadInput);
  EXPECT_NE(test_support::error_message([] { app::plan_kind({{"kind", "lunch"}}); }).find("'lunch'"), std::string::npos);
  EXPECT_NE(test_support::error_message([] { app::plan_kind({{"kind", "bench"}, {"plan_version", 99}}); }).find("plan_version 99"),
            std::string::npos);
  EXPECT_EQ(kind_of([] { app::bench_plan_from_json({{"kind", "session"}}); }), ErrorKind::kBadInput);
}

TEST(SessionPlan, ExpandsTheGridModelOutermost) {
  app::SessionPlan plan;
  plan.models = {"a.gguf", "b.gguf"};
  plan.n_ctx = {1024, 2048};
  plan.threads = {1};
  app::validate(plan, 4);
  ASSERT_EQ(plan.configs.size(), 4u);
  EXPECT_EQ(plan.configs[0].model_path, "a.gguf");
  EXPECT_EQ(plan.configs[1].model_path, "a.gguf");
  EXPECT_EQ(plan.configs[1].n_ctx, 2048);
  EXPECT_EQ(plan.configs[2].model_path, "b.gguf");
  EXPECT_EQ(plan.options.rounds, 3);
  EXPECT_EQ(plan.options.conversations, 50);
}

TEST(SessionPlan, JsonRoundTripsAndReadsVersion1) {
  app::SessionPlan plan;
  plan.options.rounds = 1;
  plan.options.cooldown = "30";
  app::validate(plan, 2);
  const json j = app::to_json(plan);
  auto back = app::session_plan_from_json(j);
  EXPECT_EQ(app::to_json(back), j);
  const json stored = json::parse(R"({"kind":"session","configs":[{"model_path":"/m.gguf","n_ctx":512,
      "max_tokens":8,"n_batch":64,"n_threads":1}],"rounds":1,"conversations":2,"on_overflow":"shift",
      "cooldown":"none","prompts":"/p.jsonl"})");
  auto old = app::session_plan_from_json(stored);
  app::validate(old, 2);
  ASSERT_EQ(old.configs.size(), 1u);
  EXPECT_EQ(old.configs[0].max_tokens, 8);
  EXPECT_EQ(old.options.on_overflow, "shift");
  EXPECT_EQ(old.prompts, "/p.jsonl");
}

TEST(SessionPlan, GpuOffloadTravelsWithEveryConfigurationAndIsCheckedLikeBenchs) {
  app::SessionPlan plan;
  plan.n_gpu_layers = 99;
  plan.devices = "Vulkan0";
  plan.op_offload = false;
  app::validate(plan, 2);
  ASSERT_EQ(plan.configs.size(), 1u);
  EXPECT_EQ(plan.configs[0].n_gpu_layers, 99);
  EXPECT_EQ(plan.configs[0].devices, "Vulkan0");
  EXPECT_FALSE(plan.configs[0].op_offload);
  const json j = app::to_json(plan);
  EXPECT_EQ(j["configs"][0]["n_gpu_layers"], 99);
  auto back = app::session_plan_from_json(j);
  app::validate(back, 2);
  EXPECT_EQ(app::to_json(back), j);
  // The defaults write nothing, so a CPU session's plan and documents read as before.
  app::SessionPlan cpu;
  app::validate(cpu, 2);
  EXPECT_FALSE(app::to_json(cpu)["configs"][0].contains("n_gpu_layers"));
  app::SessionPlan bad;
  bad.n_gpu_layers = -5;
  EXPECT_EQ(kind_of([&] { app::validate(bad, 2); }), ErrorKind::kBadInput);
  const json typo = json::parse(R"({"kind":"session","configs":[{"model_path":"/m.gguf","n_ctx":512,
      "max_tokens":8,"n_batch":64,"n_threads":1,"n_gpu_layer":99}]})");
  EXPECT_EQ(kind_of([&] { app::session_plan_from_json(typo); }), ErrorKind::kBadInput);
}

TEST(SessionPlan, BadValuesNameTheFlag) {
  auto with = [](auto change) {
    return [change] {
      app::SessionPlan plan;
      change(plan);
      app::validate(plan, 2);
    };
  };
  EXPECT_NE(test_support::error_message(with([](app::SessionPlan& p) { p.options.rounds = 0; })).find("--rounds"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::SessionPlan& p) { p.options.cooldown = "soon"; })).find("--cooldown"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::SessionPlan& p) { p.options.on_overflow = "wrap"; })).find("--on-overflow"),
            std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::SessionPlan& p) { p.n_ctx = {8}; })).find("-c 8"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::SessionPlan& p) { p.max_tokens = {0}; })).find("--max-tokens 0"), std::string::npos);
}

TEST(DoctorPlan, DefaultsAreDoctorsAndJsonRoundTrips) {
  app::DoctorPlan plan;
  EXPECT_EQ(plan.n_prompt, 128);
  EXPECT_EQ(plan.n_gen, 32);
  EXPECT_EQ(plan.repetitions, 3);
  EXPECT_TRUE(plan.experiments);
  plan.model = "m.gguf";
  plan.config.cpu_mask = "0x3";
  plan.config.flash_attn = "on";
  plan.config.use_mmap = false;
  plan.tune = true;
  plan.baseline_name = "run 7";
  plan.baseline = {{"provenance", {{"models", json::array({{{"sha256", "ab"}}})}}}};
  app::validate(plan, 4);
  EXPECT_EQ(plan.config.threads, 4);        // this device's default, resolved
  EXPECT_EQ(plan.config.flash_attn, "1");   // llama-bench's spelling
  const json j = app::to_json(plan);
  EXPECT_EQ(app::plan_kind(j), "doctor");
  EXPECT_EQ(app::to_json(app::doctor_plan_from_json(j)), j);
  // The options doctor runs with, and back: what a doctor run stores as its plan.
  const auto options = app::doctor_options(plan, "/abs/m.gguf");
  EXPECT_EQ(options.model_path, "/abs/m.gguf");
  EXPECT_EQ(options.baseline_name, "run 7");
  EXPECT_TRUE(options.bench_child);  // its children run as `run --plan -`
  EXPECT_EQ(options.config.cpu_mask, "0x3");
  EXPECT_EQ(app::doctor_plan_of(options, true).baseline, plan.baseline);
  // A hand-written plan: every field optional but the kind.
  const auto minimal = app::doctor_plan_from_json({{"kind", "doctor"}});
  EXPECT_EQ(minimal.model, "");
  EXPECT_EQ(minimal.n_prompt, 128);
}

TEST(DoctorPlan, ADraftRoundTripsIsDeployedAndIsRefusedWithTune) {
  app::DoctorPlan plan;
  plan.model = "m.gguf";
  plan.draft = "trained:draft";
  plan.draft_max = 4;
  app::validate(plan, 2);
  const json j = app::to_json(plan);
  EXPECT_EQ(j["draft"], (json{{"model", "trained:draft"}, {"max", 4}}));
  EXPECT_EQ(app::to_json(app::doctor_plan_from_json(j)), j);
  EXPECT_EQ(app::plan_models(app::Plan{plan}), (std::vector<std::string>{"m.gguf", "trained:draft"}));
  EXPECT_FALSE(app::to_json(app::DoctorPlan{}).contains("draft"));  // none: as before
  plan.tune = true;
  EXPECT_THROW(app::validate(plan, 2), Error);
  plan.tune = false;
  plan.draft_max = 0;
  EXPECT_THROW(app::validate(plan, 2), Error);
}

TEST(DoctorPlan, BadValuesAndUnknownKeysAreBadInput) {
  auto with = [](auto change) {
    return [change] {
      app::DoctorPlan plan;
      change(plan);
      app::validate(plan, 2);
    };
  };
  EXPECT_NE(test_support::error_message(with([](app::DoctorPlan& p) { p.n_prompt = 0; })).find("-p"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::DoctorPlan& p) { p.config.flash_attn = "maybe"; })).find("--flash-attn"),
            std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::DoctorPlan& p) { p.sample_hz = 0; })).find("--sample-hz"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::DoctorPlan& p) { p.budget_s = 0.5; })).find("--budget"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::DoctorPlan& p) { p.config.type_k = "q9"; })).find("q9"), std::string::npos);
  EXPECT_NE(test_support::error_message(with([](app::DoctorPlan& p) { p.baseline = json::array(); })).find("baseline"),
            std::string::npos);
  EXPECT_EQ(kind_of([] { app::doctor_plan_from_json({{"kind", "doctor"}, {"n_promt", 16}}); }), ErrorKind::kBadInput);
  EXPECT_NE(test_support::error_message([] { app::doctor_plan_from_json({{"kind", "doctor"}, {"config", {{"thread", 2}}}}); })
                .find("doctor plan config: unknown key 'thread'"),
            std::string::npos);
  EXPECT_NE(test_support::error_message([] { app::doctor_plan_from_json({{"kind", "doctor"}, {"n_gen", "many"}}); }).find("n_gen"),
            std::string::npos);
  EXPECT_NE(test_support::error_message([] { app::plan_kind({{"kind", "diagnose"}}); }).find("\"doctor\""), std::string::npos);
}

TEST(AnyPlan, ReadsByKindAndRoundTrips) {
  using nlohmann::json;
  const app::Plan bench = app::plan_from_json({{"kind", "bench"}, {"repetitions", 2}});
  EXPECT_EQ(app::kind_of(bench), "bench");
  EXPECT_EQ(std::get<app::BenchPlan>(bench).run.repetitions, 2);
  EXPECT_EQ(app::kind_of(app::plan_from_json({{"kind", "session"}})), "session");
  EXPECT_EQ(app::kind_of(app::plan_from_json({{"kind", "doctor"}})), "doctor");
  EXPECT_EQ(app::to_json(app::plan_from_json(app::to_json(bench))), app::to_json(bench));
  EXPECT_THROW(app::plan_from_json({{"kind", "lab"}}), Error);
  // validate goes to the plan's own: a bad value is refused whatever the kind.
  app::Plan bad = app::plan_from_json({{"kind", "bench"}, {"repetitions", 0}});
  EXPECT_THROW(app::validate(bad, 2), Error);
}

TEST(AnyPlan, FindsAndMapsEveryModelField) {
  using nlohmann::json;
  const app::Plan bench =
      app::plan_from_json({{"kind", "bench"}, {"sweep", {{"models", {"a.gguf", "synth:tiny", "a.gguf"}}}}});
  EXPECT_EQ(app::plan_models(bench), (std::vector<std::string>{"a.gguf", "synth:tiny"}));
  // A plan that names no model runs the built-in default: "" is listed, and mapped.
  EXPECT_EQ(app::plan_models(app::plan_from_json({{"kind", "bench"}, {"sweep", json::object()}})),
            std::vector<std::string>{""});
  app::BenchPlan with_cases;
  with_cases.cases.emplace_back();
  with_cases.cases[0].model_path = "x.gguf";
  app::Plan cases = app::plan_from_json(app::to_json(with_cases));
  app::map_plan_models(cases, [](const std::string& m) { return "/dev/" + m; });
  EXPECT_EQ(std::get<app::BenchPlan>(cases).cases.at(0).model_path, "/dev/x.gguf");
  EXPECT_EQ(app::plan_models(cases), std::vector<std::string>{"/dev/x.gguf"});
  app::Plan session = app::plan_from_json({{"kind", "session"}, {"models", json::array()}, {"prompts", "c.jsonl"}});
  EXPECT_EQ(app::plan_models(session), std::vector<std::string>{""});
  EXPECT_EQ(app::plan_prompts(session), "c.jsonl");
  app::Plan doctor = app::plan_from_json({{"kind", "doctor"}, {"model", "d.gguf"}});
  app::map_plan_models(doctor, [](const std::string& m) { return m + ".x"; });
  EXPECT_EQ(std::get<app::DoctorPlan>(doctor).model, "d.gguf.x");
  EXPECT_EQ(app::plan_prompts(doctor), "");
}

// A plan is outside bytes: too big, too deep, not JSON or a file that is not there is one
// line naming the source (with the outside text escaped), never a crash.
TEST(AnyPlan, ReadPlanRefusesHostileFilesInOneLine) {
  test_support::TempDir dir;
  auto refusal = [](const std::string& path) {
    const std::string m = test_support::error_message([&] { app::read_plan(path); });
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
    EXPECT_NE(m.find(path), std::string::npos) << m;
    return m;
  };
  test_support::write_file(dir.file("ok.json"), R"({"kind": "bench", "repetitions": 3})");
  EXPECT_EQ(std::get<app::BenchPlan>(app::read_plan(dir.file("ok.json"))).run.repetitions, 3);
  EXPECT_NE(refusal(dir.file("missing.json")).find("cannot read plan"), std::string::npos);
  test_support::write_file(dir.file("deep.json"), std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_NE(refusal(dir.file("deep.json")).find("nested deeper than 64"), std::string::npos);
  test_support::write_file(dir.file("big.json"), std::string(app::kMaxPlanBytes + 1, ' '));
  EXPECT_NE(refusal(dir.file("big.json")).find("over 64 MiB"), std::string::npos);
  test_support::write_file(dir.file("garbage.json"), "{\"kind\": \x1b[31m\n\x01");
  EXPECT_NE(refusal(dir.file("garbage.json")).find("not a JSON plan"), std::string::npos);
  test_support::write_file(dir.file("lab.json"), R"({"kind": "lab"})");
  EXPECT_NE(refusal(dir.file("lab.json")).find("\"doctor\""), std::string::npos);
}

// Each value has its field's exact type: what the type cannot hold is refused naming the
// key, never wrapped or truncated; refusals echo a bounded, escaped prefix of the value.
TEST(AnyPlan, ValuesAreReadExactlyOrRefusedNamingTheKey) {
  auto refusal = [](const json& plan) {
    const std::string m = test_support::error_message([&] { app::plan_from_json(plan); });
    EXPECT_EQ(kind_of([&] { app::plan_from_json(plan); }), ErrorKind::kBadInput) << plan.dump().substr(0, 200);
    EXPECT_LT(m.size(), 400u);
    return m;
  };
  EXPECT_NE(refusal({{"kind", "bench"}, {"repetitions", 4294967297LL}}).find("'repetitions' is out of range"),
            std::string::npos);
  EXPECT_NE(refusal({{"kind", "bench"}, {"repetitions", 2.5}}).find("'repetitions' must be a whole number, got 2.5"),
            std::string::npos);
  EXPECT_EQ(std::get<app::BenchPlan>(app::plan_from_json({{"kind", "bench"}, {"repetitions", 3.0}})).run.repetitions, 3);
  EXPECT_NE(refusal({{"kind", "bench"}, {"seed", -1}}).find("'seed' is out of range 0..18446744073709551615"),
            std::string::npos);
  EXPECT_NE(refusal({{"kind", "bench"}, {"plan_version", 4294967297LL}}).find("plan_version 4294967297 is not supported"),
            std::string::npos);
  EXPECT_NE(refusal({{"kind", "session"}, {"n_ctx", {64, "x"}}}).find("'n_ctx[1]' must be an integer"), std::string::npos);
  EXPECT_NE(refusal({{"kind", "bench"}, {"env", {{"sample_hz", 0}, {"sample_rate", 1}}}}).find("plan env: unknown key 'sample_rate'"),
            std::string::npos);
  EXPECT_NE(refusal({{"kind", "bench"}, {"load", {{"slo", {{"ttft_ms", "fast"}}}}}}).find("'slo.ttft_ms' must be a number"),
            std::string::npos);
  EXPECT_NE(refusal({{"kind", "doctor"}, {"model", std::string("a\0b", 3)}}).find("'model' holds a NUL"), std::string::npos);
  EXPECT_NE(refusal({{"kind", "doctor"}, {"model", "\xc3\x28"}}).find("'model' is not valid UTF-8"), std::string::npos);
  const std::string huge(10u << 20, 'x');
  const std::string echoed = refusal({{"kind", "bench"}, {"ceilings", json::array({huge})}});
  EXPECT_NE(echoed.find("'ceilings' must be a string"), std::string::npos);
  EXPECT_NE(echoed.find("bytes)"), std::string::npos) << echoed;  // cut, with the size it had
  EXPECT_NE(refusal({{"kind", "bench"}, {huge, 1}}).find("unknown key 'xxx"), std::string::npos);
  EXPECT_NE(refusal({{"kind", "bench"}, {"completed", {{{"case_index", -1}, {"repetition", {{"index", 0}}}}}}})
                .find("'completed[0].case_index' is out of range"),
            std::string::npos);
}

TEST(AnyPlan, CrossProductsPastTheBoundAreRefusedWithTheirSize) {
  app::SessionPlan session;
  session.models = std::vector<std::string>(100, "m");
  session.n_ctx = std::vector<int>(100, 64);
  session.n_batch = {1, 2};
  EXPECT_NE(test_support::error_message([&] { app::validate(session, 1); }).find("20000 configurations, over the 10000"),
            std::string::npos);
  app::BenchPlan bench;
  bench.cases.resize(10001);
  for (auto& c : bench.cases) c.n_prompt = 8;
  EXPECT_NE(test_support::error_message([&] { app::validate(bench, 1); }).find("10001 cases"), std::string::npos);
}

// bench --draft in a plan: one "draft" object that round-trips, whose draft model is one of
// the plan's models (a lab deploys it), and whose lengths are checked like the flags.
TEST(BenchPlan, TheDraftRoundTripsIsAModelAndItsLengthsAreChecked) {
  app::BenchPlan plan;
  plan.sweep.models = {"trained:main"};
  plan.run.spec = {"trained:draft", 6, 2};
  const json j = app::to_json(plan);
  EXPECT_EQ(j["draft"], (json{{"model", "trained:draft"}, {"max", 6}, {"min", 2}}));
  auto back = app::bench_plan_from_json(j);
  EXPECT_EQ(back.run.spec, plan.run.spec);
  EXPECT_EQ(app::to_json(back), j);
  EXPECT_FALSE(app::to_json(app::BenchPlan{}).contains("draft"));  // absent without a draft
  EXPECT_EQ(app::plan_models(app::Plan{plan}), (std::vector<std::string>{"trained:main", "trained:draft"}));

  json typo = j;
  typo["draft"]["maximum"] = 4;
  EXPECT_EQ(kind_of([&] { app::bench_plan_from_json(typo); }), ErrorKind::kBadInput);
  json no_model = j;
  no_model["draft"].erase("model");
  EXPECT_EQ(kind_of([&] { app::bench_plan_from_json(no_model); }), ErrorKind::kBadInput);
  for (const auto& [max, min] : std::vector<std::pair<int, int>>{{0, 0}, {4, 5}, {257, 0}, {4, -1}}) {
    app::BenchPlan bad = plan;
    bad.run.spec.draft_max = max;
    bad.run.spec.draft_min = min;
    EXPECT_EQ(kind_of([&] { app::validate(bad, 2); }), ErrorKind::kBadInput) << max << " " << min;
  }
  app::BenchPlan endpoint = plan;
  endpoint.env.endpoint = "http://127.0.0.1:9";
  EXPECT_EQ(kind_of([&] { app::validate(endpoint, 2); }), ErrorKind::kBadInput);
}
