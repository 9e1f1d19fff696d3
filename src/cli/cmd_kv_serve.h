#pragma once
namespace CLI {
class App;
}
namespace edgeprobe::app {
struct Environment;
}
namespace edgeprobe::cli {
// `edgeprobe kv-serve`: the prefill node of KV disaggregation (docs/disaggregation.md).
void register_kv_serve(CLI::App& app);
// --prefill-remote, --prefill-token-file, --prefill-compare-local for bench and session.
void add_prefill_remote_flags(CLI::App* cmd, app::Environment& env);
}  // namespace edgeprobe::cli
