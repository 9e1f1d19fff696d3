#pragma once
// Rows as schema v4 wrote them, for the v5 migration tests of both backends (the same SQL
// runs on SQLite and PostgreSQL):
// - a bench run (1) whose test 0 failed, was resumed and passed (two test0 summaries), a
//   test1, a run-level "qes" summary, a summary named like a test whose configuration the
//   run does not have, and a repetition with a telemetry summary of its own;
// - a lab run (2) with a device's job recorded twice (failed, then complete), a LAVA job of
//   a device whose name holds a colon, and a job summary that does not parse;
// - a session run (3) with its configuration's analysis as the summary "config0".
// 11 summaries in all. expect_v4_rows_moved checks what a v5 store made from them holds.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

#include "store/store.h"

namespace edgeprobe::store::test_rows {

inline constexpr const char* kV4Rows = R"sql(
INSERT INTO runs (id, kind, status, provenance_json, plan_json) VALUES
  (1, 'bench', 'complete', '{}', '{}'), (2, 'lab', 'failed', '{}', '{}'), (3, 'session', 'complete', '{}', '{}');
INSERT INTO configurations (id, run_id, ordinal, config_json, status) VALUES
  (1, 1, 0, '{"test":"pp16"}', 'complete'), (2, 1, 1, '{"test":"tg4"}', 'complete'),
  (3, 3, 0, '{"model_path":"m.gguf"}', 'complete');
INSERT INTO repetitions (id, configuration_id, ordinal, result_json) VALUES (1, 1, 0, '{"t":21.5}');
INSERT INTO telemetry_summaries (owner_kind, owner_id, phase, summary_json) VALUES
  ('repetition', 1, 'decode', '{"temp_c_max":51.0}'),
  ('run', 1, 'test0', '{"load_ms":[5.0],"error":{"kind":"environment","message":"oom"}}'),
  ('run', 1, 'qes', '{"total":73.7}'),
  ('run', 1, 'test1', '{"load_ms":[7.0],"error":null}'),
  ('run', 1, 'test0', '{"load_ms":[6.0],"error":null}'),
  ('run', 1, 'test5', '{"load_ms":[1.0]}'),
  ('run', 2, 'device:pc:job0', '{"run_id":null,"status":"failed","error":"ssh: closed","committed":0,"exit_code":3,"state":null}'),
  ('run', 2, 'device:pc:job0', '{"run_id":1,"status":"complete","error":"","committed":4,"exit_code":0,"state":null}'),
  ('run', 2, 'device:rack:3:job1', '{"engine":"lava","lava_job":42,"attempt":2,"status":"submitted","run_id":null,"error":"","submitted_at":1700000000.5}'),
  ('run', 2, 'device:pc:job1', 'not json'),
  ('run', 3, 'config0', '{"qes":{"score":0.8}}');
)sql";

// The same on both backends: each test's last record and the session's analysis in
// `tests`, the lab's latest word per job in `lab_jobs`, and what was neither (the run's own
// summary, the orphan test5, a unit's telemetry) still read back where it was. The
// unreadable job summary is checked by each backend's test in its own SQL.
inline void expect_v4_rows_moved(const Store& store) {
  using nlohmann::json;
  EXPECT_EQ(store.schema_version(), 5);
  EXPECT_EQ(store.integrity_check(), "ok");
  const json bench = store.load_run(1);
  EXPECT_EQ(bench["configurations"][0]["test"], json::parse(R"({"load_ms":[6.0],"error":null})"));
  EXPECT_EQ(bench["configurations"][1]["test"], json::parse(R"({"load_ms":[7.0],"error":null})"));
  EXPECT_EQ(bench["telemetry"], json::parse(R"([{"phase":"qes","summary":{"total":73.7}},
                                                {"phase":"test5","summary":{"load_ms":[1.0]}}])"));
  EXPECT_EQ(bench["configurations"][0]["repetitions"][0]["telemetry"],
            json::parse(R"([{"phase":"decode","summary":{"temp_c_max":51.0}}])"));
  const json session = store.load_run(3);
  EXPECT_EQ(session["configurations"][0]["test"], json::parse(R"({"qes":{"score":0.8}})"));
  EXPECT_EQ(session["telemetry"], json::array());

  const std::vector<LabJob> jobs = store.lab_jobs(2);
  ASSERT_EQ(jobs.size(), 2u);
  const LabJob& pc = jobs[0].device == "pc" ? jobs[0] : jobs[1];
  const LabJob& rack = jobs[0].device == "pc" ? jobs[1] : jobs[0];
  EXPECT_EQ(pc.device, "pc");
  EXPECT_EQ(pc.job, 0);
  EXPECT_EQ(pc.status, "complete");  // the latest word
  EXPECT_EQ(pc.attempt, 1);
  EXPECT_EQ(pc.device_run, 1);
  EXPECT_EQ(pc.detail, json::parse(R"({"committed":4,"exit_code":0,"state":null})"));
  EXPECT_EQ(rack.device, "rack:3");
  EXPECT_EQ(rack.job, 1);
  EXPECT_EQ(rack.status, "submitted");
  EXPECT_EQ(rack.attempt, 2);
  EXPECT_EQ(rack.device_run, 0);
  EXPECT_EQ(rack.detail, json::parse(R"({"engine":"lava","lava_job":42,"submitted_at":1700000000.5})"));
}

}  // namespace edgeprobe::store::test_rows
