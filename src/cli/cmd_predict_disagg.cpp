#include "cli/cmd_predict_disagg.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "cli/shared_flags.h"
#include "core/error.h"
#include "kv/break_even.h"
#include "report/formats.h"
#include "result/document.h"

namespace edgeprobe::cli {
namespace {

struct DisaggFlags {
  std::string result;
  OutputFlags output;
  kv::DisaggInputs in;
  std::vector<double> prompts{128, 512, 2048};
};

kv::DisaggInputs inputs(const DisaggFlags& f, const CLI::App& cmd) {
  kv::DisaggInputs in = f.in;
  if (!f.result.empty()) {
    // Read as every result file is: bounded, its version and fields checked, one line
    // naming the field when it is not an edgeprobe result.
    in = kv::fit_inputs(kv::prefill_records(result::read_result_file(f.result, "result file")));
    // A flag given next to a result overrides what was measured ("at 10 Mbit/s?").
    if (cmd.count("--link-mbit")) in.link_mbit_s = f.in.link_mbit_s;
    if (cmd.count("--local-rate")) in.local_tokens_per_s = f.in.local_tokens_per_s;
    if (cmd.count("--remote-rate")) in.remote_tokens_per_s = f.in.remote_tokens_per_s;
  }
  return in;
}

int run(const DisaggFlags& f, const CLI::App& cmd) {
  OutputTarget output(f.output.file);
  std::ostream& print = output.stream();
  const kv::DisaggInputs in = inputs(f, cmd);
  const kv::BreakEven be = kv::break_even(in);
  nlohmann::json out = {{"inputs",
                         {{"local_tokens_per_s", in.local_tokens_per_s},
                          {"remote_tokens_per_s", in.remote_tokens_per_s},
                          {"kv_bytes_per_token", in.kv_bytes_per_token},
                          {"link_mbit_s", in.link_mbit_s},
                          {"fixed_ms", in.fixed_ms},
                          {"local_fixed_ms", in.local_fixed_ms},
                          {"per_token_overhead_ms", in.per_token_overhead_ms},
                          {"local_ms_per_token_squared", in.local_ms_per_token_squared},
                          {"remote_ms_per_token_squared", in.remote_ms_per_token_squared}}},
                        {"break_even", be.to_json()},
                        {"ttft_ms", nlohmann::json::array()}};
  for (double n : f.prompts)
    out["ttft_ms"].push_back(
        {{"prompt_tokens", n}, {"local", kv::local_ttft_ms(in, n)}, {"remote", kv::remote_ttft_ms(in, n)}});
  if (f.output.format == "json") {
    print << out.dump(2) << "\n";
    output.commit();
    return 0;
  }
  print << fmt::format(
      "prefill: {:.1f} tokens/s here, {:.1f} tokens/s remote; {:.0f} KV bytes/token; link {:.1f} Mbit/s; "
      "{:.1f} ms fixed remote, {:.1f} ms local; {:.3f} ms/token serialize+restore\n",
      in.local_tokens_per_s, in.remote_tokens_per_s, in.kv_bytes_per_token, in.link_mbit_s, in.fixed_ms,
      in.local_fixed_ms, in.per_token_overhead_ms);
  if (in.local_ms_per_token_squared > 0 || in.remote_ms_per_token_squared > 0)
    print << fmt::format("attention's growth: {:.3g} ms/token^2 here, {:.3g} remote\n",
                         in.local_ms_per_token_squared, in.remote_ms_per_token_squared);
  if (be.prompt_tokens)
    print << fmt::format("remote prefill wins above {:.0f} prompt tokens\n", *be.prompt_tokens);
  else
    print << "remote prefill never wins at this link rate\n";
  const bool attention_helps = in.local_ms_per_token_squared > in.remote_ms_per_token_squared;
  if (be.min_link_mbit && attention_helps)
    print << fmt::format("at or below {:.1f} Mbit/s only this node's faster-growing attention makes it win\n",
                         *be.min_link_mbit);
  else if (be.min_link_mbit)
    print << fmt::format("at or below {:.1f} Mbit/s it never wins\n", *be.min_link_mbit);
  else
    print << "it never wins at any link rate (the remote node is not faster here)\n";
  for (const auto& row : out["ttft_ms"])
    print << fmt::format("  {:>6.0f} tokens: TTFT {:.1f} ms local, {:.1f} ms remote\n",
                         row["prompt_tokens"].get<double>(), row["local"].get<double>(),
                         row["remote"].get<double>());
  output.commit();
  return 0;
}

}  // namespace

void register_predict_disagg(CLI::App& app) {
  auto f = std::make_shared<DisaggFlags>();
  CLI::App* cmd = app.add_subcommand("predict-disagg",
                                     "Predict when prefilling on another node and sending the KV cache pays");
  cmd->add_option("--result", f->result,
                  "A bench/session JSON result measured with --prefill-remote --prefill-compare-local");
  cmd->add_option("--local-rate", f->in.local_tokens_per_s, "This (decode) node's prefill rate, tokens/s");
  cmd->add_option("--remote-rate", f->in.remote_tokens_per_s, "The prefill node's rate, tokens/s");
  cmd->add_option("--kv-bytes-per-token", f->in.kv_bytes_per_token, "Sequence-state bytes per token");
  cmd->add_option("--link-mbit", f->in.link_mbit_s, "Link rate, Mbit/s");
  cmd->add_option("--local-fixed-ms", f->in.local_fixed_ms, "A local prefill call's own cost, ms")->capture_default_str();
  cmd->add_option("--fixed-ms", f->in.fixed_ms, "Per-request cost: round trip and framing, ms")
      ->capture_default_str();
  cmd->add_option("--per-token-overhead-ms", f->in.per_token_overhead_ms, "Serialize + restore per token, ms")
      ->capture_default_str();
  cmd->add_option("--local-ms-per-token2", f->in.local_ms_per_token_squared,
                  "Attention's growth here: ms per token^2")
      ->capture_default_str();
  cmd->add_option("--remote-ms-per-token2", f->in.remote_ms_per_token_squared,
                  "Attention's growth on the prefill node: ms per token^2")
      ->capture_default_str();
  cmd->add_option("--prompts", f->prompts, "Prompt lengths to show TTFTs for");
  add_output_options(cmd, f->output, {report::formats_of(report::OutputKind::kDeviceText)});
  cmd->callback([f, cmd] {
    const int rc = run(*f, *cmd);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace edgeprobe::cli
