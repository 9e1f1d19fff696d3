#include "app/fidelity_job.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "app/engine_factory.h"
#include "app/models.h"
#include "core/digest.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/subprocess.h"
#include "model/gguf_info.h"
#include "model/quantize.h"
#include "model/synth.h"
#include "result/result.h"
#include "workload/sweep.h"

namespace edgeprobe::app {
namespace {

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw_bad_input("the text {} is not a readable file: give --text FILE", path);
  const auto size = std::filesystem::file_size(path, ec);
  constexpr uintmax_t kMaxText = 256ull << 20;
  if (ec || size > kMaxText) throw_bad_input("the text {} is over 256 MiB: give a shorter --text", path);
  std::ifstream in(path, std::ios::binary);
  std::string text(size, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(size)))
    throw_bad_input("cannot read the text {}", path);
  return text;
}

nlohmann::json model_json(const model::GgufInfo& info, const engine::LoadedModel& m, const std::string& sha) {
  return {{"path", info.path},
          {"sha256", sha},
          {"description", m.description()},
          {"architecture", info.shape.architecture},
          {"n_vocab", m.n_vocab()},
          {"quantization", info.dominant_type()},
          {"n_gpu_layers", m.options().n_gpu_layers},
          {"devices", m.options().devices}};
}

std::string engine_text(const EngineHandle& h) {
  return h.identity.name + " " + h.identity.commit + ", CPU variant " + h.identity.cpu_variant;
}

// A temporary file removed when it goes out of scope.
struct TempPath {
  std::string path;
  ~TempPath() {
    if (!path.empty()) std::remove(path.c_str());
  }
};

// The reference's compact form computed by a child edgeprobe on another CPU variant.
void save_reference_in_child(const FidelityPlan& plan, const std::string& ref_path,
                             const std::string& text_path, int n_threads, const std::string& out,
                             JobSink* sink) {
  std::vector<std::string> argv = self_command();
  argv.insert(argv.end(), {"fidelity",
                           "-q",
                           "-o",
                           "json",
                           "-m",
                           ref_path,
                           "--save-reference",
                           out,
                           "--cpu-variant",
                           plan.reference_cpu_variant,
                           "--text",
                           text_path,
                           "-c",
                           std::to_string(plan.chunks.n_ctx),
                           "-t",
                           std::to_string(n_threads),
                           "--top-k",
                           std::to_string(plan.top_k),
                           "--samples",
                           std::to_string(plan.samples)});
  if (plan.chunks.n_chunks > 0) argv.insert(argv.end(), {"--chunks", std::to_string(plan.chunks.n_chunks)});
  const int ngl =
      plan.reference_gpu_layers != -2 ? plan.reference_gpu_layers : plan.model_options.n_gpu_layers;
  argv.insert(argv.end(), {"--n-gpu-layers", std::to_string(ngl)});
  const std::string dev =
      plan.reference_devices != "\x01" ? plan.reference_devices : plan.model_options.devices;
  if (!dev.empty()) argv.insert(argv.end(), {"--device", dev});
  if (sink)
    sink->progress("computing the reference on CPU variant " + plan.reference_cpu_variant + " in a child");
  SubprocessOptions o = within(24 * 3600);
  o.own_group = false;
  const auto r = run_subprocess(argv, o);
  if (r.exit_code != 0) {
    const std::string why = output_line(r.err);
    throw Error(r.exit_code == 2 ? ErrorKind::kBadInput : ErrorKind::kEnvironment,
                fmt::format("the reference on CPU variant {} failed: {}", plan.reference_cpu_variant, why));
  }
}

// The model's file type as a quantization edgeprobe can make; throws for a float file or
// one of another type (before anything is measured).
std::string checked_quant_name(const model::GgufInfo& info) {
  const std::string quant = model::quant_name_of_ftype(info.file_type);
  if (quant.empty() || quant == "f32" || quant == "f16" || quant == "bf16")
    throw_bad_input("--check-quantization needs a quantized model; {} has file type {} ({})", info.path,
                    info.file_type, quant.empty() ? "none edgeprobe can make" : quant);
  return quant;
}

// llama.cpp's own quantization of the reference to the model's file type, scored against
// the reference on the same chunks.
fidelity::Report::QuantizationCheck fresh_quantization(
    engine::Engine& engine, engine::ModelOptions ro, const engine::LoadedModel& ref,
    const model::GgufInfo& model_info, fidelity::Report& report, const std::vector<engine::Token>& tokens,
    const fidelity::ChunkSettings& chunks, const engine::ContextOptions& co,
    const fidelity::Progress& progress, JobSink* sink) {
  fidelity::Report::QuantizationCheck check;
  check.quant = checked_quant_name(model_info);
  if (sink)
    sink->progress(fmt::format("quantizing the reference to {} (first use; then cached)", check.quant));
  check.path = model::quantized_copy(ro.path, report.reference["sha256"], check.quant, co.n_threads);
  ro.path = check.path;
  auto fresh = engine.load(ro);
  if (sink) sink->progress("scoring the fresh quantization");
  fidelity::Timings timings;
  check.summary =
      fidelity::summarize(fidelity::compare_models(*fresh, ref, tokens, chunks, co, timings, progress));
  return check;
}

}  // namespace

fidelity::Report run_fidelity(const FidelityPlan& plan, const JobContext& context) {
  const auto t0 = std::chrono::steady_clock::now();
  JobSink* sink = context.sink;
  const bool saving = !plan.save_reference.empty();
  if (plan.model.empty()) throw_bad_input("fidelity needs -m MODEL");
  if (!saving && plan.reference.empty())
    throw_bad_input("fidelity needs --reference REF (the f16 of the model, or a file from --save-reference)");
  if (plan.top_k < 1 || plan.top_k > fidelity::kMaxTopK)
    throw_bad_input("--top-k {} out of range 1..{}", plan.top_k, fidelity::kMaxTopK);
  if (plan.samples < 0 || plan.samples > fidelity::kMaxSamples)
    throw_bad_input("--samples {} out of range 0..{}", plan.samples, fidelity::kMaxSamples);

  if (plan.check_quantization &&
      (saving || fidelity::is_reference_file(plan.reference) || !plan.reference_cpu_variant.empty()))
    throw_bad_input("--check-quantization needs --reference MODEL (the full-precision file it quantizes)");

  // Every file checked by our own reader before llama.cpp sees it.
  ModelSet models;
  const std::string model_path = models.add_spec(plan.model, sink);
  const model::GgufInfo model_info = models.info(static_cast<size_t>(models.index_of(model_path)));
  if (plan.check_quantization) checked_quant_name(model_info);
  std::optional<fidelity::ReferenceReader> stored;
  std::string ref_path;
  std::optional<model::GgufInfo> ref_info;
  if (!saving) {
    if (fidelity::is_reference_file(plan.reference)) {
      stored.emplace(plan.reference);
    } else {
      ref_path = models.add_spec(plan.reference, sink);
      ref_info = models.info(static_cast<size_t>(models.index_of(ref_path)));
      if (ref_info->shape.architecture != model_info.shape.architecture)
        throw_bad_input("the reference is a {} model and the model a {}: fidelity compares one architecture",
                        ref_info->shape.architecture, model_info.shape.architecture);
    }
  }
  if (stored && stored->header().architecture != model_info.shape.architecture)
    throw_bad_input("the stored reference was computed by a {} model and the model is a {}",
                    stored->header().architecture, model_info.shape.architecture);
  if (stored && plan.n_ctx_given && plan.chunks.n_ctx != stored->header().n_ctx)
    throw_bad_input(
        "the stored reference was computed with -c {}, not -c {}: leave -c out (its chunks are the file's)",
        stored->header().n_ctx, plan.chunks.n_ctx);

  const EngineHandle engine = make_engine(plan.env, context);
  engine::ModelOptions mo = plan.model_options;
  mo.path = model_path;
  if (sink) sink->progress("loading " + model_path);
  auto model = engine.engine->load(mo);

  fidelity::Report report;
  report.engine = result::to_json(engine.identity);
  report.n_threads = plan.n_threads > 0 ? plan.n_threads : workload::default_thread_count();
  engine::ContextOptions co;
  co.n_threads = report.n_threads;
  co.op_offload = plan.op_offload;
  report.top_k = plan.top_k;

  if (sink) sink->progress("hashing " + model_path);
  const std::string model_sha = model::sha256_file(model_path);
  report.model = model_json(model_info, *model, model_sha);

  auto progress = [sink](int done, int total) {
    if (sink) sink->units(static_cast<size_t>(done), static_cast<size_t>(total), "chunks");
  };

  TempPath child_ref;
  if (!saving && !stored && !plan.reference_cpu_variant.empty()) {
    const std::string text_path = plan.text.empty() ? fidelity::default_text_path() : plan.text;
    (void)read_text(text_path);  // a bad --text is the parent's one line, not the child's
    char name[] = "/tmp/edgeprobe-fidelity-XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) throw_environment("cannot make a temporary file in /tmp for the child's reference");
    close(fd);
    child_ref.path = name;
    save_reference_in_child(plan, ref_path, text_path, report.n_threads, child_ref.path, sink);
    stored.emplace(child_ref.path);
  }

  if (stored) {
    const auto& h = stored->header();
    if (h.n_vocab != model->n_vocab())
      throw_bad_input("the stored reference has a vocabulary of {} tokens, the model {}", h.n_vocab,
                      model->n_vocab());
    if (h.vocab_sha256 != fidelity::vocab_hash(*model))
      throw_bad_input(
          "the stored reference's vocabulary differs from the model's (same size, other token texts)");
    report.settings = {h.n_ctx, h.n_chunks};
    report.reference = {{"kind", child_ref.path.empty() ? "stored" : "child"},
                        {"path", child_ref.path.empty() ? plan.reference : ref_path},
                        {"cpu_variant", plan.reference_cpu_variant},
                        {"model_path", h.model_path},
                        {"sha256", h.model_sha256},
                        {"description", h.model_desc},
                        {"engine", h.engine},
                        {"top_k", h.top_k},
                        {"n_vocab", h.n_vocab}};
    report.text = {{"path", h.text}, {"sha256", h.text_sha256}, {"tokens_used", stored->tokens().size()}};
    report.top_k = h.top_k;
    report.samples = h.samples;
    report.kld_lower_bound = true;
    if (sink) sink->progress("scoring against the stored reference");
    const auto scores =
        fidelity::compare_stored(*model, *stored, co, report.timings, report.rest_mass_mean, progress);
    report.summary = fidelity::summarize(scores);
  } else {
    const std::string text_path = plan.text.empty() ? fidelity::default_text_path() : plan.text;
    const std::string text = read_text(text_path);
    fidelity::ChunkSettings chunks = plan.chunks;
    const auto tokens = fidelity::chunk_text(*model, text, chunks);
    report.settings = chunks;
    report.text = {{"path", text_path}, {"sha256", sha256_hex(text)}, {"tokens_used", tokens.size()}};
    if (saving) {
      fidelity::ReferenceHeader h;
      h.n_vocab = model->n_vocab();
      h.vocab_sha256 = fidelity::vocab_hash(*model);
      h.architecture = model_info.shape.architecture;
      h.model_sha256 = model_sha;
      h.model_path = model_path;
      h.model_desc = model->description();
      h.engine = engine_text(engine);
      h.n_ctx = chunks.n_ctx;
      h.n_chunks = chunks.n_chunks;
      h.top_k = plan.top_k;
      h.samples = plan.samples;
      h.text = text_path;
      h.text_sha256 = report.text["sha256"];
      fidelity::ReferenceWriter writer(plan.save_reference, h, tokens);
      if (sink) sink->progress("computing the reference");
      fidelity::save_reference(*model, tokens, chunks, co, plan.top_k, plan.samples, writer, report.timings,
                               progress);
      writer.finish();
      report.saved_reference = plan.save_reference;
      report.samples = plan.samples;
      report.saved_bytes = static_cast<int64_t>(std::filesystem::file_size(plan.save_reference));
      report.reference = {{"kind", "none"}};
    } else {
      engine::ModelOptions ro = plan.model_options;
      ro.path = ref_path;
      if (plan.reference_gpu_layers != -2) ro.n_gpu_layers = plan.reference_gpu_layers;
      if (plan.reference_devices != "\x01") ro.devices = plan.reference_devices;
      if (sink) sink->progress("loading the reference " + ref_path);
      auto ref = engine.engine->load(ro);
      if (const std::string diff = fidelity::vocab_difference(*model, *ref); !diff.empty())
        throw_bad_input("{}: fidelity compares models of one vocabulary", diff);
      if (sink) sink->progress("hashing " + ref_path);
      report.reference = model_json(*ref_info, *ref, model::sha256_file(ref_path));
      report.reference["kind"] = "model";
      if (sink) sink->progress("scoring");
      const auto scores =
          fidelity::compare_models(*model, *ref, tokens, chunks, co, report.timings, progress);
      report.summary = fidelity::summarize(scores);
      if (plan.check_quantization)
        report.quantization_check = fresh_quantization(*engine.engine, ro, *ref, model_info, report, tokens,
                                                       chunks, co, progress, sink);
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace edgeprobe::app
