#include "cli/cmd_train.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "engine/backend.h"
#include "model/gguf_info.h"
#include "model/trained.h"

namespace edgeprobe::cli {

// `edgeprobe train [NAME...]`: makes the trained models (docs/models.md) in the model cache,
// once; afterwards it only checks them (seconds). A thin command over model::trained_model.
void register_train(CLI::App& app) {
  struct Args {
    std::vector<std::string> names;
    std::vector<std::string> quants;
    int threads = 0;
  };
  auto args = std::make_shared<Args>();
  std::string known;
  for (const auto& r : model::trained_recipes()) known += (known.empty() ? "" : ", ") + r.name;
  CLI::App* cmd = app.add_subcommand("train",
                                     "Train the small model family on the King James Bible (trained:main, "
                                     "trained:draft), once, into the model cache");
  cmd->add_option("names", args->names, "Which: " + known + " (default: all)");
  cmd->add_option("-q,--quant", args->quants,
                  "Also quantize to these types (comma list), as trained:NAME:QUANT does")
      ->delimiter(',');
  cmd->add_option("-t,--threads", args->threads, "Threads (0 = all cores)");
  cmd->callback([args] {
    std::vector<std::string> names = args->names;
    if (names.empty())
      for (const auto& r : model::trained_recipes()) names.push_back(r.name);
    for (const auto& n : names) model::trained_recipe(n);  // unknown names fail before any work
    engine::start_log_capture(false);  // llama.cpp logs every tensor it loads or quantizes
    engine::load_cpu_backend();
    model::TrainOptions o;
    o.n_threads = args->threads;
    o.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
    for (const auto& name : names) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::string> quants = {"f32"};
      quants.insert(quants.end(), args->quants.begin(), args->quants.end());
      for (const auto& q : quants) {
        const std::string path = model::trained_model(name, q, o);
        const auto info = model::read_gguf_info(path);
        fmt::print("trained:{}:{}: {}, {:.2f} M params, {:.1f} MiB\n", name, q, path,
                   static_cast<double>(info.n_params()) / 1e6,
                   static_cast<double>(info.file_bytes) / (1024.0 * 1024.0));
      }
      fmt::print(stderr, "trained:{}: ready in {:.1f}s\n", name,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    fmt::print("held-out text: {}\n", model::trained_held_out_text());
  });
}

}  // namespace edgeprobe::cli
