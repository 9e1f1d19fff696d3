#include "cli/cmd_synth.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>

#include "core/error.h"
#include "core/text.h"
#include "engine/backend.h"
#include "model/gguf_info.h"
#include "model/synth.h"

namespace edgeprobe::cli {

void register_synth(CLI::App& app) {
  struct Args {
    std::string shape = "tiny";
    std::string quant = "q4_0";
    std::string output, old_o;
    uint64_t seed = 42;
    int threads = 0;
    int64_t n_vocab = 0, n_embd = 0, n_layer = 0, n_ff = 0, n_head = 0, n_head_kv = 0, n_ctx = 0;
    int64_t n_expert = 0, n_expert_used = 0;
    bool force = false;
  };
  auto args = std::make_shared<Args>();
  std::string shapes, quants;
  for (const auto& s : model::named_shapes()) shapes += (shapes.empty() ? "" : ", ") + s.name;
  for (const auto& q : model::synth_quant_types()) quants += (quants.empty() ? "" : ", ") + q;

  CLI::App* cmd = app.add_subcommand("synth", "Write a llama-architecture GGUF with random weights");
  cmd->add_option("--shape", args->shape, "Named shape: " + shapes)->capture_default_str();
  cmd->add_option("-q,--quant", args->quant, "Quantization type: " + quants)->capture_default_str();
  cmd->add_option("--output", args->output, "Output GGUF path (default: synth-<shape>-<quant>.gguf)");
  // -o is the output format in every other subcommand; synth once took it for the file.
  // Kept, hidden, only to turn an old `-o FILE` into a clear error instead of a surprise.
  CLI::Option* old_o = cmd->add_option("-o", args->old_o)->group("");
  cmd->add_option("--seed", args->seed, "Random seed; the same seed writes the same file")->capture_default_str();
  cmd->add_option("-t,--threads", args->threads, "Threads for quantization (0 = all)");
  cmd->add_option("--n-vocab", args->n_vocab, "Custom vocabulary size (overrides the shape)");
  cmd->add_option("--n-embd", args->n_embd, "Custom embedding length");
  cmd->add_option("--n-layer", args->n_layer, "Custom layer count");
  cmd->add_option("--n-ff", args->n_ff, "Custom feed-forward length");
  cmd->add_option("--n-head", args->n_head, "Custom attention head count");
  cmd->add_option("--n-head-kv", args->n_head_kv, "Custom KV head count");
  cmd->add_option("--n-ctx", args->n_ctx, "Custom training context length");
  cmd->add_option("--n-expert", args->n_expert,
                  "Mixture of experts: feed-forward experts per layer (each --n-ff wide; 0 = dense)");
  cmd->add_option("--n-expert-used", args->n_expert_used,
                  "Mixture of experts: experts a token is routed through");
  cmd->add_flag("-f,--force", args->force, "Overwrite an existing file");
  cmd->callback([args, old_o] {
    if (old_o->count() > 0)
      throw_bad_input("synth writes its file with --output (-o is the output format elsewhere): use --output {}",
                      shell_quote(args->old_o));
    model::SynthOptions o;
    o.shape = model::named_shape(args->shape);
    auto override_dim = [](int64_t& dim, int64_t value) {
      if (value != 0) dim = value;
    };
    override_dim(o.shape.n_vocab, args->n_vocab);
    override_dim(o.shape.n_embd, args->n_embd);
    override_dim(o.shape.n_layer, args->n_layer);
    override_dim(o.shape.n_ff, args->n_ff);
    override_dim(o.shape.n_head, args->n_head);
    override_dim(o.shape.n_head_kv, args->n_head_kv);
    override_dim(o.shape.n_ctx_train, args->n_ctx);
    o.shape.n_expert = args->n_expert;
    o.shape.n_expert_used = args->n_expert_used;
    if (args->n_vocab || args->n_embd || args->n_layer || args->n_ff || args->n_head || args->n_head_kv ||
        args->n_expert)
      o.shape.name = "custom";
    o.quant = args->quant;
    o.seed = args->seed;
    o.n_threads = args->threads;
    o.output_path = args->output.empty() ? fmt::format("synth-{}-{}.gguf", o.shape.name, o.quant) : args->output;
    // '-' is stdout for every other subcommand's --output; a GGUF is a file (it is mapped).
    if (o.output_path == "-") throw_bad_input("synth writes a GGUF file, not to stdout: give --output a file name");
    // A typo in a directory must not become a new directory tree.
    const std::filesystem::path parent = std::filesystem::path(o.output_path).parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent))
      throw_bad_input("cannot write --output '{}': the directory '{}' does not exist (synth creates no directories)",
                      o.output_path, parent.string());
    if (std::filesystem::exists(o.output_path) && !args->force)
      throw_bad_input("'{}' already exists; pass --force to overwrite it", o.output_path);
    engine::start_log_capture(false);  // llama.cpp's quantizer logs every tensor
    engine::load_cpu_backend();
    model::synthesize_model(o);
    const auto info = model::read_gguf_info(o.output_path);
    fmt::print("{}: {} shape, {}, {:.2f} M params, {:.1f} MiB, {:.2f} bits/weight\n", o.output_path, o.shape.name,
               info.dominant_type(), static_cast<double>(info.n_params()) / 1e6,
               static_cast<double>(info.file_bytes) / (1024.0 * 1024.0), info.bits_per_weight());
  });
}

}  // namespace edgeprobe::cli
