#include "cli/cmd_kv_serve.h"
#include "cli/shared_flags.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "app/engine_factory.h"
#include "app/models.h"
#include "app/plan.h"
#include "core/error.h"
#include "core/stop_token.h"
#include "engine/cpu_mask.h"
#include "kv/server.h"
#include "runner/bench_runner.h"
#include "workload/sweep.h"

namespace edgeprobe::cli {
namespace {

struct KvServeFlags {
  std::string model, listen = "127.0.0.1:7788", token_file, cpu_mask, flash_attn = "auto", port_file;
  engine::ContextOptions context;
  int max_ctx = 4096, timeout_ms = 10000, max_connections = -1, max_clients = 4;
  app::Environment env;
  GpuFlags gpu;
};

int run(KvServeFlags f) {
  const std::string token = kv::load_token(f.token_file);
  kv::ServerOptions o;
  o.listen = kv::parse_endpoint(f.listen);
  o.token = token;
  o.context = f.context;
  o.context.n_ctx = f.max_ctx;
  o.context.flash_attn = workload::parse_flash_attn(f.flash_attn);
  o.context.op_offload = f.gpu.op_offload();
  if (!f.cpu_mask.empty()) {
    engine::check_cpu_mask_usable(f.cpu_mask);
    o.context.cpu_mask = engine::parse_cpu_mask(f.cpu_mask);
  }
  if (f.max_ctx < 1) throw_bad_input("--max-ctx {} must be positive", f.max_ctx);
  if (f.timeout_ms < 1) throw_bad_input("--timeout-ms {} must be positive", f.timeout_ms);
  o.timeout_ms = f.timeout_ms;
  o.max_connections = f.max_connections;
  o.max_clients = f.max_clients;

  const std::string path = app::ModelSet::resolve(f.model, nullptr);
  // Our own bounds-checked GGUF reader sees the file before llama.cpp does.
  const kv::Fingerprint fingerprint = kv::make_fingerprint(path, o.context);
  const app::EngineHandle engine = app::make_engine(f.env);
  engine::ModelOptions load;  // a prefill node on a GPU ships the same KV state (llama.cpp copies it to the host)
  load.path = path;
  load.n_gpu_layers = f.gpu.n_gpu_layers;
  load.devices = f.gpu.devices;
  const auto model = engine.engine->load(load);
  // A context of the largest size once, so a setting llama.cpp refuses fails now, not
  // on the first client.
  model->new_context(o.context);
  auto log = [](const std::string& line) { std::cerr << "kv-serve: " << line << std::endl; };
  kv::KvServer server(*model, fingerprint, o, log);
  const kv::Endpoint bound{o.listen.host, server.port()};
  log(fmt::format("listening on {} (model {})", bound.to_string(), path));
  if (!f.port_file.empty()) {
    std::ofstream(f.port_file + ".tmp") << server.port() << "\n";
    std::rename((f.port_file + ".tmp").c_str(), f.port_file.c_str());
  }
  server.serve([] { return StopToken::process().stop_requested(); });
  return 0;
}

}  // namespace

void register_kv_serve(CLI::App& app) {
  auto f = std::make_shared<KvServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "kv-serve", "Prefill node: prefill prompts for a decode node and send it the KV state");
  cmd->add_option("-m,--model", f->model,
                  "GGUF model file or synth:SHAPE[:QUANT] (the decode node's model, same file)");
  cmd->add_option("--listen", f->listen, "HOST:PORT to listen on (port 0: any free one)")
      ->capture_default_str();
  cmd->add_option("--token-file", f->token_file,
                  "File holding the shared-secret token (default: $EDGEPROBE_KV_TOKEN)");
  cmd->add_option("-t,--threads", f->context.n_threads, "Prefill threads")->capture_default_str();
  cmd->add_option("-C,--cpu-mask", f->cpu_mask, "CPUs the prefill threads may use (hex)");
  cmd->add_option("--poll", f->context.poll,
                  "Threadpool polling level 0..100 (0 sleeps: better on a busy host)")
      ->capture_default_str();
  cmd->add_option("-b,--batch-size", f->context.n_batch, "Logical batch size")->capture_default_str();
  cmd->add_option("--ubatch-size", f->context.n_ubatch, "Physical batch size")->capture_default_str();
  cmd->add_option("--max-ctx", f->max_ctx, "Largest context a client may ask for")->capture_default_str();
  cmd->add_option("--flash-attn", f->flash_attn, "Flash attention on|off|auto (must match the decode node)")
      ->capture_default_str();
  cmd->add_option("--cache-type-k", f->context.type_k, "K cache type (must match)")->capture_default_str();
  cmd->add_option("--cache-type-v", f->context.type_v, "V cache type (must match)")->capture_default_str();
  cmd->add_option("--timeout-ms", f->timeout_ms, "Deadline for every read within a frame")
      ->capture_default_str();
  cmd->add_option("--cpu-variant", f->env.cpu_variant, "Load this ggml CPU variant instead of the best one");
  add_gpu_options(cmd, f->gpu);
  cmd->add_option("--port-file", f->port_file, "Write the port listened on to this file once ready");
  cmd->add_option("--max-clients", f->max_clients,
                  "Decode nodes served at once, each with a context of its size; one more is told the server is busy")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--max-connections", f->max_connections, "Exit after serving this many connections")
      ->group("");
  cmd->add_flag("-v,--verbose", f->env.verbose_engine_log, "Echo llama.cpp's log to stderr");
  cmd->callback([f] {
    const int rc = run(*f);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

void add_prefill_remote_flags(CLI::App* cmd, app::Environment& env) {
  cmd->add_option(
      "--prefill-remote", env.prefill_remote,
      "Prefill on the kv-serve node at HOST:PORT, decode here (falls back to local prefill on any failure, with a "
      "warning)");
  cmd->add_flag("--prefill-remote-required", env.prefill_remote_required,
                "Make a fallback to local prefill an error of the repetition or turn (exit 3) instead of a warning");
  cmd->add_option("--prefill-token-file", env.prefill_token_file,
                  "File holding the kv-serve token (default: $EDGEPROBE_KV_TOKEN)");
  cmd->add_flag("--prefill-compare-local", env.prefill_compare_local,
                "Also prefill locally in each repetition or turn, timed apart, to compare both paths");
  cmd->add_option("--prefill-transfer", env.prefill_transfer,
                  "A later turn's state: tail (only the cells this node lacks) or whole")
      ->capture_default_str();
}

}  // namespace edgeprobe::cli
