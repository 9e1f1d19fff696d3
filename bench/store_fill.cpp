// Fills a results store with a lab's years of generated bench runs for bench/store-scale.sh,
// and times the store's live write path on it.
//
//   store_fill fill (--sqlite PATH | --pg URL) [--runs N] [--configs K] [--reps M]
//              [--decode-steps S] [--devices D] [--models X] [--schema V]
//   store_fill live --store LOCATION [--units N]
//   store_fill list --store LOCATION [--last N] [--device PART] [--model LABEL]
//
// fill creates the store at schema v`--schema` (default: the latest) through the store's own
// migrations, then writes rows shaped like what `edgeprobe bench` writes (provenance, plan,
// configurations, a test record per configuration (before schema v5 a run summary named
// test<i>, as that edgeprobe wrote it), repetitions with telemetry; sizes
// taken from a real store, see docs/architecture.md "Store at scale"). It writes in large
// batches, not through the Store seam: SQLite with prepared statements in one transaction
// per batch of runs, PostgreSQL with COPY. Run i belongs to device i % D and to model
// (i / 7) % X, so the script knows which filters match how many runs.
//
// live records --units repetitions into a new run through open_store(), the path a runner
// takes: one committed transaction per unit. It prints units per second.
//
// list is Store::list_runs() with the filters `edgeprobe runs` has no flags for yet
// (--last, --model), printing how many runs matched.
#include <fmt/format.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/pg_conn.h"
#include "store/pg_schema.h"
#include "store/sqlite_schema.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string mode, sqlite_path, pg_url, store, device, model;
  int64_t last = 0;
  int64_t runs = 100000, configs = 10, reps = 10, decode_steps = 128, devices = 200, models = 30;
  int schema = 0;  // 0: latest
  int64_t units = 200;
};

[[noreturn]] void usage(const std::string& why) {
  fmt::print(stderr, "store_fill: {}\n", why);
  std::exit(2);
}

int64_t to_count(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 0) usage(fmt::format("{} takes a count, not '{}'", flag, text));
  return v;
}

Options parse(int argc, char** argv) {
  if (argc < 2) usage("usage: store_fill fill|live|list [options] (see bench/store_fill.cpp)");
  Options o;
  o.mode = argv[1];
  if (o.mode != "fill" && o.mode != "live" && o.mode != "list")
    usage(fmt::format("unknown mode '{}' (fill, live or list)", o.mode));
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(fmt::format("{} needs a value", flag));
    const char* value = argv[++i];
    if (flag == "--sqlite") o.sqlite_path = value;
    else if (flag == "--pg") o.pg_url = value;
    else if (flag == "--runs") o.runs = to_count(flag, value);
    else if (flag == "--configs") o.configs = to_count(flag, value);
    else if (flag == "--reps") o.reps = to_count(flag, value);
    else if (flag == "--decode-steps") o.decode_steps = to_count(flag, value);
    else if (flag == "--devices") o.devices = to_count(flag, value);
    else if (flag == "--models") o.models = to_count(flag, value);
    else if (flag == "--schema") o.schema = static_cast<int>(to_count(flag, value));
    else if (flag == "--units") o.units = to_count(flag, value);
    else if (flag == "--store") o.store = value;
    else if (flag == "--last") o.last = to_count(flag, value);
    else if (flag == "--device") o.device = value;
    else if (flag == "--model") o.model = value;
    else usage(fmt::format("unknown option {}", flag));
  }
  if (o.mode == "fill" && o.sqlite_path.empty() == o.pg_url.empty())
    usage("fill takes exactly one of --sqlite PATH and --pg URL");
  if (o.mode != "fill" && o.store.empty()) usage(o.mode + " needs --store LOCATION");
  if (o.devices == 0 || o.models == 0 || o.configs == 0) usage("--devices, --models and --configs must be > 0");
  return o;
}

// xorshift64*: reproducible numbers without <random>'s cost per call.
class Numbers {
 public:
  explicit Numbers(uint64_t seed) : s_(seed | 1) {}
  double uniform() {  // [0, 1)
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return static_cast<double>((s_ * 0x2545F4914F6CDD1DULL) >> 11) * 0x1.0p-53;
  }
  double around(double centre, double spread) { return centre * (1.0 + spread * (uniform() - 0.5)); }

 private:
  uint64_t s_;
};

std::string device_id(int64_t device) { return fmt::format("dev-{:016x}", 0x9e3779b97f4a7c15ULL * (device + 1)); }
std::string model_file(int64_t model) { return fmt::format("lab-model-{:02}-q4_0.gguf", model); }

// Three years of runs, oldest first, as SQLite's strftime writes them.
std::string timestamp(int64_t run, int64_t runs, int offset_s) {
  const std::time_t start = 1698796800;  // 2023-11-01T00:00:00Z
  const std::time_t t = start + static_cast<std::time_t>((3 * 365 * 86400.0) * run / std::max<int64_t>(runs, 1)) +
                        offset_s;
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.000Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// The shapes below follow rows a real `edgeprobe bench` wrote (sqlite3 on its store):
// provenance ~2.8 kB, plan ~0.65 kB, configuration ~0.27 kB, test<i> summary ~1.1 kB, a
// prefill repetition ~0.5 kB and a decode one ~0.6 kB + 14 B per decode step.
struct RunRows {
  std::string created_at, finished_at, device_id, device_json, provenance, plan;
};

RunRows run_rows(const Options& o, int64_t run) {
  RunRows r;
  const int64_t device = run % o.devices;
  r.created_at = timestamp(run, o.runs, 0);
  r.finished_at = timestamp(run, o.runs, 600);
  r.device_id = device_id(device);
  r.device_json = fmt::format(
      R"j({{"arch":"aarch64","board":"lab-board-{0:03}","cpu_model":"Cortex-A78","hostname":"lab-node-{0:03}","id":"{1}","kernel":"Linux 6.1.57 aarch64","os":"Debian GNU/Linux 12 (bookworm)","soc":"soc-{2}"}})j",
      device, r.device_id, device % 7);
  const std::string model = model_file((run / 7) % o.models);
  r.provenance = fmt::format(
      R"j({{"command_line":"edgeprobe bench -m /srv/models/{0} -p 512 -n 128 -r {1} -o json","cpu_features":{{"arch":"aarch64","features":{{"ASIMD":true,"ASIMDDP":true,"ASIMDFHM":true,"BF16":false,"I8MM":false,"SME":false,"SVE":false,"SVE2":false}},"present":["ASIMD","ASIMDDP","ASIMDFHM"],"source":"hwcap"}},"device":{2},"edgeprobe_version":"0.1.0","engine":{{"commit":"80fb11a","cpu_variant":"armv8.2_2","cpu_variant_features":{{"DOTPROD":"1","FP16_VA":"1","LLAMAFILE":"1","NEON":"1","OPENMP":"1","REPACK":"1"}},"cpu_variant_library":"/opt/edgeprobe/lib/libggml-cpu-armv8.2_2.so","kind":"in-process","name":"llama.cpp","version":"0.4.0-dev"}},"isa_gap":{{"best_installed_variant":"armv8.2_2","best_score":40,"best_variant":"armv8.2_2","compiled_features":["NEON","DOTPROD","FP16_VA"],"cpu_features":["ASIMD","ASIMDDP","ASIMDFHM"],"fallback":false,"library_path":"/opt/edgeprobe/lib/libggml-cpu-armv8.2_2.so","loaded_score":40,"loaded_variant":"armv8.2_2","summary":"best variant loaded","unused_features":[]}},"models":[{{"architecture":"llama","bits_per_weight":4.924398457709015,"n_params":1235814400,"name":"lab-model","path":"/srv/models/{0}","quant":"q4_0","sha256":"{3:016x}{3:016x}{3:016x}{3:016x}","shape":{{"n_embd":2048,"n_ff":8192,"n_head":32,"n_head_kv":8,"n_layer":16,"n_vocab":128256}},"size_bytes":773025920,"tensor_types":{{"f32":{{"bytes":270336,"params":67584,"tensors":33}},"q4_0":{{"bytes":644087808,"params":1145044992,"tensors":112}},"q6_K":{{"bytes":128667776,"params":262668288,"tensors":1}}}}}}],"started_at_utc":"{4}"}})j",
      model, o.reps, r.device_json, 0x9e3779b97f4a7c15ULL * ((run / 7) % o.models + 1), r.created_at.substr(0, 19) + "Z");
  r.plan = fmt::format(
      R"j({{"cases":[{{"config":{{"cpu_mask":"","cpu_strict":false,"flash_attn":-1,"n_batch":2048,"n_depth":0,"n_gen":128,"n_prompt":512,"n_threads":4,"n_ubatch":512,"poll":50,"type_k":"f16","type_v":"f16","use_mmap":true}},"model_path":"/srv/models/{0}"}}],"ceilings":"auto","delay_s":0.0,"env":{{"cpu_variant":"","sample_hz":20.0,"sysfs_root":"/"}},"hash_models":true,"keep_engine_log":false,"kind":"bench","plan_version":1,"repetitions":{1},"seed":42,"warmup":true}})j",
      model, o.reps);
  return r;
}

bool is_decode(int64_t config) { return config % 2 == 1; }

std::string config_row(int64_t run, int64_t config, const Options& o) {
  const bool decode = is_decode(config);
  return fmt::format(
      R"j({{"cpu_mask":"","cpu_strict":false,"flash_attn":-1,"model_path":"/srv/models/{0}","n_batch":2048,"n_depth":0,"n_gen":{1},"n_prompt":{2},"n_threads":{3},"n_ubatch":512,"poll":50,"test":"{4}","type_k":"f16","type_v":"f16","use_mmap":true}})j",
      model_file((run / 7) % o.models), decode ? 128 : 0, decode ? 0 : 512, 1 + config / 2 % 4,
      decode ? "tg128" : "pp512");
}

std::string test_summary(Numbers& n) {
  return fmt::format(
      R"j({{"error":null,"load_ms":[{:.6f}],"page_cache_resident_share":1.0,"roofline":null,"serving":null,"telemetry":{{"load":{{"cfs_periods":0.0,"clusters":[{{"cpus":[0,1,2,3],"name":"cpu","thread_time_share":1.0}}],"duration_ms":{:.6f},"involuntary_ctx_switches":2.0,"max_rss_kb":{:.0f}.0,"other_cpu_share":{:.6f},"peak_rss_kb":{:.0f}.0,"process_cpu_share":{:.6f},"samples":0,"thermal":{{"cpu-thermal":{:.1f}}},"throttled_ms":0.0,"throttled_periods":0.0,"voluntary_ctx_switches":0.0}},"sample_hz":20.0,"unavailable":["battery: unavailable: /sys/class/power_supply is empty","rapl: unavailable: no /sys/class/powercap/intel-rapl:* (absent)","ina3221: unavailable: no INA3221 hwmon rails (absent)"]}}}})j",
      n.around(140, 0.4), n.around(140, 0.4), n.around(812000, 0.1), n.uniform() * 0.2, n.around(815000, 0.1),
      n.uniform(), n.around(55, 0.3));
}

std::string repetition_row(int64_t config, int64_t rep, const Options& o, Numbers& n) {
  const double start_ns = n.around(2.0e10, 0.5);
  const double rss = n.around(812000, 0.1);
  const std::string phase_telemetry = fmt::format(
      R"j("cfs_periods":0.0,"clusters":[{{"cpus":[0,1,2,3],"name":"cpu","thread_time_share":1.0}}],"duration_ms":{:.6f},"involuntary_ctx_switches":{:.0f}.0,"max_rss_kb":{:.0f}.0,"other_cpu_share":{:.6f},"peak_rss_kb":{:.0f}.0,"process_cpu_share":{:.6f},"samples":{},"thermal":{{"cpu-thermal":{:.1f}}},"throttled_ms":0.0,"throttled_periods":0.0,"voluntary_ctx_switches":{:.0f}.0)j",
      n.around(2800, 0.3), n.around(120, 0.5), rss, n.uniform() * 0.05, rss, 1.0 - n.uniform() * 0.05,
      static_cast<int>(n.around(56, 0.2)), n.around(60, 0.3), n.around(30, 0.5));
  if (!is_decode(config)) {
    const double ms = n.around(900, 0.3);
    return fmt::format(
        R"j({{"decode_ms":0.0,"decode_step_ms":[],"decode_tokens_per_s":0.0,"end_ns":{:.0f},"index":{},"peak_rss_bytes":{:.0f},"prefill_ms":{:.6f},"prefill_tokens_per_s":{:.6f},"start_ns":{:.0f},"telemetry":{{"prefill":{{{}}}}},"ttft_ms":{:.6f}}})j",
        start_ns + ms * 1e6, rep, rss * 1024, ms, 512 / ms * 1000, start_ns, phase_telemetry, ms);
  }
  std::string steps;
  double total = 0;
  steps.reserve(static_cast<size_t>(o.decode_steps) * 11);
  for (int64_t i = 0; i < o.decode_steps; ++i) {
    const double step = n.around(22.5, 0.3);
    total += step;
    fmt::format_to(std::back_inserter(steps), "{}{:.6f}", i ? "," : "", step);
  }
  return fmt::format(
      R"j({{"decode_ms":{:.6f},"decode_step_ms":[{}],"decode_tokens_per_s":{:.6f},"end_ns":{:.0f},"index":{},"peak_rss_bytes":{:.0f},"prefill_ms":null,"prefill_tokens_per_s":null,"start_ns":{:.0f},"telemetry":{{"decode":{{{}}}}},"ttft_ms":{:.6f}}})j",
      total, steps, o.decode_steps / std::max(total, 1e-9) * 1000, start_ns + total * 1e6, rep, rss * 1024, start_ns,
      phase_telemetry, total / std::max<int64_t>(o.decode_steps, 1));
}

// What each table's rows add up to, for the script's figures.
struct Totals {
  int64_t runs = 0, configurations = 0, repetitions = 0, summaries = 0, json_bytes = 0;
};

void report(const Totals& t, Clock::time_point started) {
  const double s = std::chrono::duration<double>(Clock::now() - started).count();
  fmt::print("filled runs={} configurations={} repetitions={} summaries={} json_bytes={} seconds={:.1f} "
             "repetitions_per_s={:.0f}\n",
             t.runs, t.configurations, t.repetitions, t.summaries, t.json_bytes, s, t.repetitions / s);
}

// ---- SQLite: prepared statements, one transaction per batch of runs -------------------

void fill_sqlite(const Options& o) {
  namespace sq = edgeprobe::store::sqlite;
  const std::string& path = o.sqlite_path;
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) usage(fmt::format("{}: cannot open", path));
  sq::check_is_ours(db, path);
  sq::migrate_to(db, path, o.schema ? o.schema : sq::latest_schema_version());
  // A generated store is thrown away if this is killed: no journal, no fsync while
  // filling. The store switches itself back to WAL when edgeprobe opens it.
  sq::exec(db, path, "PRAGMA journal_mode = OFF");
  sq::exec(db, path, "PRAGMA synchronous = OFF");
  sq::exec(db, path, "PRAGMA cache_size = -262144");
  if (sq::pragma_integer(db, path, "SELECT count(*) FROM runs") != 0) usage(path + ": not empty; fill wants a new store");

  sq::Statement run(db, path,
                    "INSERT INTO runs (id, created_at, finished_at, kind, status, device_id, device, provenance_json, "
                    "plan_json) VALUES (?1, ?2, ?3, 'bench', 'complete', ?4, ?5, ?6, ?7)");
  sq::Statement config(db, path,
                       "INSERT INTO configurations (id, run_id, ordinal, config_json, status) "
                       "VALUES (?1, ?2, ?3, ?4, 'complete')");
  sq::Statement rep(db, path,
                    "INSERT INTO repetitions (id, configuration_id, ordinal, recorded_at, result_json) "
                    "VALUES (?1, ?2, ?3, ?4, ?5)");
  const int schema = o.schema ? o.schema : sq::latest_schema_version();
  sq::Statement summary(db, path,
                        schema >= 5
                            ? "INSERT INTO tests (configuration_id, result_json) VALUES (?1, ?3)"
                            : "INSERT INTO telemetry_summaries (owner_kind, owner_id, phase, summary_json) "
                              "VALUES ('run', ?1, ?2, ?3)");
  auto reset = [](sq::Statement& s) { s.step(), s.reset(); };  // insert the bound row, ready for the next
  Numbers n(42);
  Totals t;
  const auto started = Clock::now();
  constexpr int64_t kBatch = 1000;
  for (int64_t first = 0; first < o.runs; first += kBatch) {
    sq::exec(db, path, "BEGIN");
    for (int64_t i = first; i < std::min(o.runs, first + kBatch); ++i) {
      const RunRows r = run_rows(o, i);
      const int64_t run_id = i + 1;
      run.bind(1, run_id).bind(2, r.created_at).bind(3, r.finished_at).bind(4, r.device_id).bind(5, r.device_json);
      run.bind(6, r.provenance).bind(7, r.plan);
      reset(run);
      t.json_bytes += static_cast<int64_t>(r.provenance.size() + r.plan.size());
      for (int64_t c = 0; c < o.configs; ++c) {
        const int64_t config_id = i * o.configs + c + 1;
        const std::string cj = config_row(i, c, o);
        config.bind(1, config_id).bind(2, run_id).bind(3, c).bind(4, cj);
        reset(config);
        const std::string sj = test_summary(n);
        summary.bind(1, schema >= 5 ? config_id : run_id).bind(3, sj);
        if (schema < 5) summary.bind(2, fmt::format("test{}", c));
        reset(summary);
        t.json_bytes += static_cast<int64_t>(cj.size() + sj.size());
        for (int64_t p = 0; p < o.reps; ++p) {
          const std::string pj = repetition_row(c, p, o, n);
          rep.bind(1, config_id * o.reps + p + 1).bind(2, config_id).bind(3, p).bind(4, r.created_at).bind(5, pj);
          reset(rep);
          t.json_bytes += static_cast<int64_t>(pj.size());
        }
      }
      t.runs += 1;
      t.configurations += o.configs;
      t.summaries += o.configs;
      t.repetitions += o.configs * o.reps;
    }
    sq::exec(db, path, "COMMIT");
    if ((first / kBatch) % 10 == 9) report(t, started);
  }
  report(t, started);
  sq::exec(db, path, "PRAGMA journal_mode = WAL");
  sqlite3_close(db);
}

// ---- PostgreSQL: COPY in text format --------------------------------------------------

// COPY's text format: backslash, tab and newline escaped; JSON from dump() has no raw
// control characters, so only the backslash needs care.
void append_field(std::string& line, std::string_view value) {
  for (const char c : value) {
    if (c == '\\') line += "\\\\";
    else if (c == '\t') line += "\\t";
    else if (c == '\n') line += "\\n";
    else line += c;
  }
}

class Copy {
 public:
  Copy(PGconn* conn, const std::string& sql) : conn_(conn) {
    PGresult* r = PQexec(conn_, sql.c_str());
    if (PQresultStatus(r) != PGRES_COPY_IN) usage(fmt::format("{}: {}", sql, PQerrorMessage(conn_)));
    PQclear(r);
  }
  void row(std::initializer_list<std::string_view> fields) {
    bool first = true;
    for (const std::string_view f : fields) {
      if (!first) buffer_ += '\t';
      append_field(buffer_, f);
      first = false;
    }
    buffer_ += '\n';
    if (buffer_.size() > (1 << 20)) flush();
  }
  void finish() {
    flush();
    if (PQputCopyEnd(conn_, nullptr) != 1) usage(PQerrorMessage(conn_));
    PGresult* r = PQgetResult(conn_);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) usage(fmt::format("COPY: {}", PQerrorMessage(conn_)));
    PQclear(r);
  }

 private:
  void flush() {
    if (!buffer_.empty() && PQputCopyData(conn_, buffer_.data(), static_cast<int>(buffer_.size())) != 1)
      usage(PQerrorMessage(conn_));
    buffer_.clear();
  }
  PGconn* conn_;
  std::string buffer_;
};

void exec_pg(PGconn* conn, const char* sql) {
  PGresult* r = PQexec(conn, sql);
  if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
    usage(fmt::format("{}: {}", sql, PQerrorMessage(conn)));
  PQclear(r);
}

void fill_pg(const Options& o) {
  namespace pg = edgeprobe::store::pg;
  const int schema = o.schema ? o.schema : pg::latest_schema_version();
  {
    const pg::Connection schema(o.pg_url, edgeprobe::store::redact_password(o.pg_url));
    pg::migrate_to(schema, edgeprobe::store::Mode::kCreate, o.schema ? o.schema : pg::latest_schema_version());
    if (schema.exec("SELECT count(*) FROM runs").integer(0, 0) != 0) usage("the database is not empty; fill wants a new store");
  }
  PGconn* conn = PQconnectdb(o.pg_url.c_str());
  if (PQstatus(conn) != CONNECTION_OK) usage(PQerrorMessage(conn));
  Numbers n(42);
  Totals t;
  const auto started = Clock::now();
  // One COPY per table at a time (a connection has one COPY open), so runs go in batches:
  // the runs of a batch, then their configurations and summaries, then their repetitions.
  constexpr int64_t kBatch = 2000;
  for (int64_t first = 0; first < o.runs; first += kBatch) {
    const int64_t last = std::min(o.runs, first + kBatch);
    exec_pg(conn, "BEGIN");
    {
      Copy runs(conn,
                "COPY runs (id, created_at, finished_at, kind, status, device_id, device, provenance_json, plan_json) "
                "FROM STDIN");
      for (int64_t i = first; i < last; ++i) {
        const RunRows r = run_rows(o, i);
        runs.row({std::to_string(i + 1), r.created_at, r.finished_at, "bench", "complete", r.device_id, r.device_json,
                  r.provenance, r.plan});
        t.json_bytes += static_cast<int64_t>(r.provenance.size() + r.plan.size());
      }
      runs.finish();
    }
    {
      Copy configs(conn, "COPY configurations (id, run_id, ordinal, config_json, status) FROM STDIN");
      for (int64_t i = first; i < last; ++i)
        for (int64_t c = 0; c < o.configs; ++c) {
          const std::string cj = config_row(i, c, o);
          configs.row({std::to_string(i * o.configs + c + 1), std::to_string(i + 1), std::to_string(c), cj, "complete"});
          t.json_bytes += static_cast<int64_t>(cj.size());
        }
      configs.finish();
    }
    {
      Copy summaries(conn,
                     schema >= 5
                         ? "COPY tests (configuration_id, result_json) FROM STDIN"
                         : "COPY telemetry_summaries (owner_kind, owner_id, phase, summary_json) FROM STDIN");
      for (int64_t i = first; i < last; ++i)
        for (int64_t c = 0; c < o.configs; ++c) {
          const std::string sj = test_summary(n);
          if (schema >= 5)
            summaries.row({std::to_string(i * o.configs + c + 1), sj});
          else
            summaries.row({"run", std::to_string(i + 1), fmt::format("test{}", c), sj});
          t.json_bytes += static_cast<int64_t>(sj.size());
        }
      summaries.finish();
    }
    {
      Copy reps(conn, "COPY repetitions (id, configuration_id, ordinal, recorded_at, result_json) FROM STDIN");
      for (int64_t i = first; i < last; ++i) {
        const std::string recorded_at = timestamp(i, o.runs, 0);
        for (int64_t c = 0; c < o.configs; ++c) {
          const int64_t config_id = i * o.configs + c + 1;
          for (int64_t p = 0; p < o.reps; ++p) {
            const std::string pj = repetition_row(c, p, o, n);
            reps.row({std::to_string(config_id * o.reps + p + 1), std::to_string(config_id), std::to_string(p),
                      recorded_at, pj});
            t.json_bytes += static_cast<int64_t>(pj.size());
          }
        }
      }
      reps.finish();
    }
    exec_pg(conn, "COMMIT");
    t.runs += last - first;
    t.configurations += (last - first) * o.configs;
    t.summaries += (last - first) * o.configs;
    t.repetitions += (last - first) * o.configs * o.reps;
    if ((first / kBatch) % 5 == 4) report(t, started);
  }
  // Explicit ids leave the identity sequences behind: move them past the rows.
  exec_pg(conn,
          "SELECT setval(pg_get_serial_sequence('runs', 'id'), (SELECT coalesce(max(id), 0) + 1 FROM runs), false), "
          "setval(pg_get_serial_sequence('configurations', 'id'), (SELECT coalesce(max(id), 0) + 1 FROM configurations), "
          "false), setval(pg_get_serial_sequence('repetitions', 'id'), (SELECT coalesce(max(id), 0) + 1 FROM "
          "repetitions), false)");
  exec_pg(conn, "VACUUM ANALYZE");
  report(t, started);
  PQfinish(conn);
}

// ---- live: the runner's path, one committed transaction per unit ----------------------

void live(const Options& o) {
  namespace store = edgeprobe::store;
  const auto s = store::open_store(o.store, store::Mode::kMustExist);
  Options shape = o;
  shape.runs = 1;
  const RunRows r = run_rows(shape, 0);
  const store::RunId run =
      s->begin_run("bench", nlohmann::json::parse(r.provenance), nlohmann::json::parse(r.plan));
  s->add_configuration(run, 1, nlohmann::json::parse(config_row(0, 1, o)));
  Numbers n(7);
  std::vector<nlohmann::json> results;
  for (int64_t u = 0; u < o.units; ++u) results.push_back(nlohmann::json::parse(repetition_row(1, u, o, n)));
  const auto started = Clock::now();
  for (int64_t u = 0; u < o.units; ++u) s->record_repetition(run, 1, u, results[static_cast<size_t>(u)]);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  s->finish_run(run, store::Status::kComplete);
  fmt::print("live units={} seconds={:.3f} units_per_s={:.1f} run={}\n", o.units, seconds, o.units / seconds, run);
}

void list(const Options& o) {
  namespace store = edgeprobe::store;
  const auto s = store::open_store(o.store, store::Mode::kMustExist);
  store::RunFilter filter;
  filter.device = o.device;
  filter.model = o.model;
  filter.last = static_cast<size_t>(o.last);
  const auto runs = s->list_runs(filter);
  fmt::print("listed runs={} first={} last={}\n", runs.size(), runs.empty() ? 0 : runs.front().id,
             runs.empty() ? 0 : runs.back().id);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    if (o.mode == "live") live(o);
    else if (o.mode == "list") list(o);
    else if (!o.sqlite_path.empty()) fill_sqlite(o);
    else fill_pg(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "store_fill: {}\n", e.what());
    return 1;
  }
  return 0;
}
