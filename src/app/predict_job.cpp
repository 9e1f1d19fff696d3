#include "app/predict_job.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/contamination.h"
#include "app/predict_evidence.h"
#include "app/step_costs.h"
#include "app/stored_run.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/stats.h"
#include "core/text.h"
#include "engine/backend.h"
#include "model/synth.h"
#include "platform/cpu_features.h"
#include "platform/device_identity.h"
#include "predict/catalogue.h"
#include "predict/published.h"
#include "probe/gpu_ceilings.h"
#include "probe/roofline.h"
#include "result/migrate.h"
#include "store/store.h"
#include "workload/sweep.h"

namespace edgeprobe::app {
namespace {

using nlohmann::json;

std::string known_shapes() {
  std::string out;
  for (const auto& s : model::named_shapes()) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

bool is_named_shape(const std::string& name) {
  const auto shapes = model::named_shapes();
  return std::any_of(shapes.begin(), shapes.end(), [&](const auto& s) { return s.name == name; });
}

std::unique_ptr<store::Store> open_existing_store(const std::string& db) {
  if (db.empty()) return nullptr;
  if (!db.starts_with("postgres") && !std::filesystem::exists(db)) return nullptr;
  return store::open_store(db, store::Mode::kMustExist);
}

std::vector<predict::Config> configs(const PredictPlan& plan, const std::vector<int>& threads) {
  std::vector<predict::Config> out;
  for (int t : threads)
    for (int p : plan.n_prompt)
      for (int n : plan.n_gen)
        for (int d : plan.n_depth)
          for (int ub : plan.n_ubatch)
            for (const auto& tk : plan.type_k) {
              predict::Config c;
              c.threads = t;
              c.n_prompt = p;
              c.n_gen = n;
              c.depth = d;
              c.n_ubatch = ub;
              c.type_k = c.type_v = tk;
              out.push_back(c);
            }
  return out;
}

// predict --draft, resolved before anything is measured.
struct SpecPlan {
  std::optional<std::pair<std::string, model::GgufInfo>> draft;
  std::vector<int> lengths;
  std::map<int, std::vector<double>> measured;
  std::string measured_basis;
};

SpecPlan speculation_plan(const PredictPlan& plan) {
  SpecPlan s;
  if (plan.draft.empty()) {
    if (plan.acceptance || !plan.acceptance_from.empty() || !plan.draft_max.empty())
      throw_bad_input("--acceptance, --acceptance-from and --draft-max apply with --draft MODEL");
    return s;
  }
  // The verify batch is priced at the prefill kernel probe's rates for its size: a device
  // predicted from a spec or the catalogue has no such rates.
  if (plan.spec || !plan.device_spec.empty() || !plan.gpu.empty())
    throw_bad_input(
        "--draft needs a measured CPU's ceilings (this machine, or --device): a spec, the catalogue and "
        "--gpu have no prefill kernel rates at a verify batch's size");
  if (plan.acceptance && (*plan.acceptance < 0 || *plan.acceptance > 1))
    throw_bad_input("invalid value {} for --acceptance: the share of proposals accepted, 0 to 1",
                    *plan.acceptance);
  if (plan.acceptance && !plan.acceptance_from.empty())
    throw_bad_input("give the acceptance as --acceptance or --acceptance-from, not both");
  const auto drafts = predict_models(plan.draft, {});
  if (drafts.size() != 1)
    throw_bad_input("--draft takes one model, a file or synth:SHAPE:QUANT ('{}')", plan.draft);
  s.draft = drafts.front();
  if (!plan.acceptance_from.empty()) {
    s.measured = measured_acceptance(plan.acceptance_from, plan.db);
    s.measured_basis = "measured in " + plan.acceptance_from;
  }
  s.lengths = plan.draft_max;
  if (s.lengths.empty() && !s.measured.empty())
    for (const auto& [k, rates] : s.measured) s.lengths.push_back(k);
  if (s.lengths.empty()) s.lengths = {2, 4, 8};
  for (int k : s.lengths)
    if (k < 1 || k > 256) throw_bad_input("invalid value {} for --draft-max: must be 1 to 256", k);
  return s;
}

void validate(const PredictPlan& plan, size_t models, size_t thread_counts) {
  auto positive = [](const std::vector<int>& v, const char* flag, bool zero_ok) {
    for (int x : v)
      if (x < (zero_ok ? 0 : 1)) throw_bad_input("invalid value {} for {}: {}", x, flag, zero_ok ? "must be 0 or more" : "must be at least 1");
  };
  positive(plan.n_prompt, "-p", true);
  positive(plan.n_gen, "-n", true);
  positive(plan.n_depth, "-d", true);
  positive(plan.n_ubatch, "-ub", false);
  positive(plan.threads, "-t", false);
  for (const auto& t : plan.type_k)
    if (probe::kv_type_bytes_per_element(t) <= 0)
      throw_bad_input("unknown KV cache type '{}' for -ctk (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl)", t);
  // The size first, in floating point, so an absurd sweep cannot overflow the count.
  const double rows = static_cast<double>(models) * static_cast<double>(thread_counts) *
                      static_cast<double>(plan.n_prompt.size()) * static_cast<double>(plan.n_gen.size()) *
                      static_cast<double>(plan.n_depth.size()) * static_cast<double>(plan.n_ubatch.size()) *
                      static_cast<double>(plan.type_k.size());
  if (rows > static_cast<double>(kMaxPredictRows))
    throw_bad_input("this sweep would predict {:.0f} configurations; the most one predict prints is {} (fewer values "
                    "per flag)",
                    rows, kMaxPredictRows);
}

}  // namespace

std::vector<std::pair<std::string, model::GgufInfo>> predict_models(const std::string& spec,
                                                                    const std::vector<std::string>& quants) {
  std::vector<std::pair<std::string, model::GgufInfo>> out;
  std::string shape_name = spec;
  std::vector<std::string> qs = quants;
  if (spec.starts_with("synth:")) {
    const std::string rest = spec.substr(6);
    const auto colon = rest.find(':');
    shape_name = rest.substr(0, colon);
    if (colon != std::string::npos) {
      if (!quants.empty())
        throw_bad_input("'{}' names its quantization; -q applies to a shape alone (write synth:{} -q ...)", spec, shape_name);
      qs = {rest.substr(colon + 1)};
    }
  } else if (!is_named_shape(spec)) {
    if (!std::filesystem::exists(spec))
      throw_bad_input("'{}' is neither a model file nor a known shape ({}); give a GGUF path, synth:SHAPE[:QUANT], "
                      "or a shape with -q",
                      spec, known_shapes());
    if (!quants.empty())
      throw_bad_input("-q applies to a shape; the file '{}' holds its own quantization", spec);
    out.emplace_back(spec, model::read_gguf_info(spec));
    return out;
  }
  if (!is_named_shape(shape_name)) throw_bad_input("unknown model shape '{}'; known shapes: {}", shape_name, known_shapes());
  if (qs.empty()) qs = {"q4_0"};
  for (const auto& q : qs)
    out.emplace_back(fmt::format("{} {}", shape_name, q), model::planned_layout(model::named_shape(shape_name), q));
  return out;
}

std::string predict_catalogue_dir() {
  if (const char* env = std::getenv("EDGEPROBE_DATA_DIR"); env && *env) return std::string(env) + "/predict";
  return std::string(EDGEPROBE_DATA_DIR) + "/predict";
}

namespace {

// A device not measured, from the catalogue's published measurements (predict/published.h):
// a catalogue device (--device-spec, flags override its figures) or a spec given by flags
// when the store holds no run to scale it by.
PredictReport predict_from_catalogue(const PredictPlan& plan,
                                     const std::vector<std::pair<std::string, model::GgufInfo>>& models) {
  namespace cat = predict::catalogue;
  namespace pub = predict::published;
  const std::string dir = predict_catalogue_dir();
  const auto catalogue = cat::load(std::filesystem::path(dir) / "devices.json",
                                   std::filesystem::path(dir) / "measurements.json");
  PredictReport report;
  pub::Figures figures;
  std::string name;
  if (!plan.device_spec.empty()) {
    const cat::Device& d = cat::find_device(catalogue, plan.device_spec);
    figures = pub::figures_of(d);
    name = fmt::format("{} ({}, class {})", d.key, d.name, d.device_class);
    if (plan.spec && plan.spec->bandwidth_gb_per_s > 0) {
      figures.bandwidth_gbs = plan.spec->bandwidth_gb_per_s;
      figures.bandwidth_basis = "given by --bandwidth";
    }
    if (figures.bandwidth_gbs <= 0)
      throw_bad_input(
          "device '{}' has no memory bandwidth figure in the catalogue ({}{}): give it with --bandwidth GB/s",
          d.key, d.bandwidth_gbs && !d.bandwidth_gbs->note.empty() ? d.bandwidth_gbs->note : "none read",
          d.notes.empty() ? "" : "; " + d.notes);
    if (figures.bandwidth_basis.starts_with("derived"))
      report.notes.push_back(
          fmt::format("{}: no bandwidth figure read in a source; the derived {:g} GB/s is used ({})", d.key,
                      figures.bandwidth_gbs, figures.bandwidth_basis));
  } else {
    figures.bandwidth_gbs = plan.spec->bandwidth_gb_per_s;
    figures.bandwidth_basis = "given by --bandwidth";
    name = fmt::format("spec: {:g} GB/s", figures.bandwidth_gbs);
    report.notes.push_back(
        "the store holds no run to scale this spec by: the efficiencies are the catalogue's, "
        "pooled over every device class of the backend (--device-spec names a class)");
  }
  if (plan.spec) {
    if (plan.spec->matmul_gflop_per_s > 0)
      report.notes.push_back(
          "--gflops is not used with the catalogue: it holds no matmul-rate figures to calibrate "
          "against; prefill scales with the cores (--cores) or the GPU's cores");
    if (plan.spec->memory_bytes > 0) figures.memory_gb = static_cast<double>(plan.spec->memory_bytes) / 1e9;
    if (plan.spec->cores > 0) {
      std::optional<double> ghz;
      for (const auto& c : figures.clusters)
        if (c.max_ghz && (!ghz || *c.max_ghz > *ghz)) ghz = c.max_ghz;
      figures.clusters = {{"given by --cores", plan.spec->cores, ghz}};
    }
  }
  std::string backend = plan.backend;
  if (backend.empty()) {
    if (figures.device_class == "discrete-gpu")
      throw_bad_input("{} is a discrete GPU: name its backend with --backend (cuda, vulkan, rocm, ...)",
                      plan.device_spec);
    backend = "cpu";
  }
  if (backend != "cpu" && !plan.threads.empty())
    throw_bad_input("-t applies to the cpu backend; a {} prediction has no thread count", backend);
  const auto calibration = pub::fit(catalogue);
  report.device = name + (backend == "cpu" ? "" : fmt::format(" [{}]", backend));
  report.device_basis = fmt::format(
      "not measured: the catalogue's spec ({}) and efficiencies fitted on the published "
      "fit measurements of {} ({} of {} usable)",
      figures.bandwidth_basis, dir, calibration.fit_entries - calibration.skipped.size(),
      calibration.fit_entries);
  const int cores = figures.total_cores();
  const std::vector<int> threads =
      !plan.threads.empty() ? plan.threads : std::vector<int>{backend == "cpu" ? std::max(1, cores) : 1};
  if (backend == "cpu" && !plan.threads.empty() && cores > 0)
    for (int t : plan.threads)
      if (t > cores)
        report.notes.push_back(
            fmt::format("-t {} is more threads than the {} cores the catalogue lists: the extra "
                        "threads add nothing here",
                        t, cores));
  const double storage = plan.spec ? plan.spec->storage_mb_per_s : 0;
  for (const auto& [label, info] : models)
    for (const auto& c : configs(plan, threads))
      report.rows.push_back({label,
                             info.dominant_type(),
                             predict::predict_from_catalogue(info, calibration, figures, backend, c, storage),
                             {}});
  return report;
}

}  // namespace

PredictReport run_predict(const PredictPlan& plan, const JobContext& ctx) {
  PredictReport report;
  engine::start_log_capture(false);  // llama.cpp's and ggml's lines stay out of the report
  if (plan.spec && !plan.device_id.empty()) throw_bad_input("give a device as --device or as a spec, not both");
  if (plan.spec && !plan.gpu.empty())
    throw_bad_input("--gpu names a GPU of a measured device (this machine or --device); a spec is a device never measured");
  if (!plan.device_spec.empty() && !plan.device_id.empty())
    throw_bad_input(
        "give a device as --device (measured, in the store) or as --device-spec (the catalogue), not both");
  if (!plan.device_spec.empty() && !plan.gpu.empty())
    throw_bad_input(
        "--gpu names a GPU of a measured device; with --device-spec, --backend picks the GPU's backend");
  if (!plan.backend.empty()) {
    const auto& known = predict::catalogue::backends();
    if (std::find(known.begin(), known.end(), plan.backend) == known.end())
      throw_bad_input("unknown backend '{}' for --backend ({})", plan.backend, fmt::join(known, ", "));
    if (!plan.spec && plan.device_spec.empty())
      throw_bad_input("--backend applies to a device given by --device-spec or by a spec (--bandwidth)");
  }
  if (plan.device_spec.empty() && plan.spec && plan.spec->bandwidth_gb_per_s <= 0)
    throw_bad_input("a device spec needs its memory bandwidth: --bandwidth GB/s (the figure decode scales with)");
  const SpecPlan spec_plan = speculation_plan(plan);
  report.draft = plan.draft;
  std::vector<std::pair<std::string, model::GgufInfo>> models;
  validate(plan, plan.models.size() * std::max<size_t>(1, plan.quants.size()),
           std::max<size_t>(1, plan.threads.size()));
  for (const auto& m : plan.models)
    for (auto& entry : predict_models(m, plan.quants)) models.push_back(std::move(entry));

  const auto store = open_existing_store(plan.db);
  auto progress = [&](const std::string& s) {
    if (ctx.sink) ctx.sink->progress(s);
  };

  if (!plan.device_spec.empty() || (plan.spec && stored_efficiencies(store.get()).first.runs == 0))
    return predict_from_catalogue(plan, models);

  if (plan.spec) {
    const auto [de, pe] = stored_efficiencies(store.get());
    const std::vector<int> threads = plan.threads.empty() ? std::vector<int>{std::max(1, plan.spec->cores)} : plan.threads;
    report.device = fmt::format("spec: {:g} GB/s{}", plan.spec->bandwidth_gb_per_s,
                                plan.spec->matmul_gflop_per_s > 0 ? fmt::format(", {:g} GFLOP/s", plan.spec->matmul_gflop_per_s) : "");
    report.device_basis = fmt::format("not measured: efficiencies from {} decode and {} prefill test(s) in {}", de.runs,
                                      pe.runs, store ? store->location() : std::string("no store"));
    if (de.runs == 0)
      report.notes.push_back("the store holds no run with a bandwidth efficiency: run edgeprobe bench on any device "
                             "first, so a spec has measured efficiencies to scale by");
    for (const auto& [label, info] : models)
      for (const auto& c : configs(plan, threads))
        report.rows.push_back(
            {label, info.dominant_type(), predict::predict_from_spec(info, *plan.spec, c, de, pe), {}});
    return report;
  }

  probe::DeviceCeilings ceilings;
  uint64_t memory_bytes = 0;
  std::string device_id;
  if (!plan.device_id.empty()) {
    if (!store) throw_bad_input("--device {}: no results store at '{}' (lab and bench runs record devices there)", plan.device_id, plan.db);
    store::RunFilter filter;
    filter.kind = "bench";
    filter.device = plan.device_id;
    filter.device_exact = true;
    const auto runs = store->list_runs(filter);
    bool found = false;
    for (auto it = runs.rbegin(); it != runs.rend() && !found; ++it) {
      const auto record = store->get_run(it->id);
      // A provenance document holds its extras (ceilings, emulated) at the top level.
      const json& extra = record.provenance;
      if (!extra.is_object() || !extra.contains("ceilings") || !extra["ceilings"].is_object()) continue;
      ceilings = probe::ceilings_from_json(extra["ceilings"]);
      report.device = fmt::format("{} ({})", plan.device_id, ceilings.cpu_model);
      memory_bytes = ceilings.memory_bytes;
      report.device_basis = fmt::format("ceilings stored with bench run {} ({})", it->id, record.created_at);
      report.emulated = extra.value("emulated", false);
      found = true;
    }
    if (!found) {
      if (runs.empty())
        throw_bad_input("no device '{}' in {} (edgeprobe runs lists the stored runs and their devices)", plan.device_id,
                        store->location());
      throw_bad_input("device '{}' has no bench run with ceilings in {}: run edgeprobe bench there (with --ceilings auto)",
                      plan.device_id, store->location());
    }
    device_id = plan.device_id;
    if (!plan.gpu.empty()) {
      auto view = probe::gpu_view(ceilings, plan.gpu);
      if (!view) {
        std::string stored;
        for (const auto& g : ceilings.gpus) stored += (stored.empty() ? "" : ", ") + g.device;
        throw_bad_input("device '{}' has no ceilings for GPU '{}' in the store ({}): run edgeprobe bench -ngl 99 or "
                        "edgeprobe probe --gpu there",
                        plan.device_id, plan.gpu, stored.empty() ? "no GPU was probed" : "probed: " + stored);
      }
      ceilings = std::move(*view);
      memory_bytes = ceilings.memory_bytes;
      // A driver's words, or a stored device's from another machine: one bounded line.
      report.device += fmt::format(", GPU {} ({})", one_line(ceilings.device, 80), one_line(ceilings.device_description, 200));
    }
  } else {
    const FsRoot fs(plan.sysfs_root);
    const auto features = platform::detect_cpu_features(fs);
    report.emulated = features.emulated;
    if (features.emulated) report.notes.push_back(platform::emulation_warning(features));
    device_id = platform::detect_device(fs).id;
    probe::ProbeOptions po;
    po.sysfs_root = plan.sysfs_root;
    po.variant = plan.cpu_variant;
    po.progress = [&](const std::string& step, size_t, size_t) {
      if (step != "done") progress("measuring the device's ceilings: " + step);
    };
    if (features.emulated) {
      // Under qemu the figures describe the emulator, and the full probe takes minutes:
      // measure only what a prediction reads, small (the model's own kernels follow).
      po.compute.types = {"q4_0"};
      po.compute.rows = po.compute.cols = 1024;
      po.compute.tokens = 64;
      po.bandwidth.per_cluster = false;
      report.notes.push_back("under emulation the probe ran reduced (generic matmul: q4_0 1024x1024 x 64 tokens; "
                             "no per-cluster bandwidth) and no per-step costs were measured");
    }
    progress("measuring the device's ceilings (cached after the first run)");
    ceilings = probe::load_or_measure(po, false);
    if (ceilings.compute_status != "measured")
      throw_environment("this machine's compute could not be probed ({}): predict needs the kernel probe",
                        ceilings.compute_status);
    memory_bytes = ceilings.memory_bytes > 0 ? ceilings.memory_bytes : probe::memory_total_bytes(plan.sysfs_root);
    report.device = fmt::format("this machine: {} ({})", ceilings.cpu_model, device_id);
    report.device_basis = fmt::format("ceilings {} {}", ceilings.from_cache ? "cached in" : "measured now, cached in",
                                      ceilings.cache_path);
  }
  if (!plan.gpu.empty() && !plan.threads.empty())
    throw_bad_input("-t does not apply with --gpu: a GPU's figures have no thread count");
  if (!plan.gpu.empty() && plan.device_id.empty()) {
    // This machine's GPU: its ceilings and the models' kernels on it (cached with the CPU's).
    probe::ProbeOptions po;
    po.sysfs_root = plan.sysfs_root;
    po.variant = plan.cpu_variant;
    po.progress = [&](const std::string& step, size_t, size_t) {
      if (step != "done") progress("measuring the GPU's ceilings: " + step);
    };
    probe::ensure_gpu_ceilings(ceilings, {plan.gpu}, po, false);
    for (const auto& [label, info] : models) {
      probe::KernelNeeds needs;
      for (int p : plan.n_prompt)
        for (int ub : plan.n_ubatch)
          if (p > 0) needs.prefill_tokens.insert(probe::prefill_kernel_tokens(p, ub));
      needs.decode_threads.insert(0);
      progress(fmt::format("measuring {}'s kernels on {} (cached after the first run)", label, plan.gpu));
      probe::ensure_gpu_model_kernels(ceilings, plan.gpu, info, needs, po);
    }
    ceilings = *probe::gpu_view(ceilings, plan.gpu);
    memory_bytes = ceilings.memory_bytes;
    // A driver's words, or a stored device's from another machine: one bounded line.
    report.device += fmt::format(", GPU {} ({})", one_line(ceilings.device, 80), one_line(ceilings.device_description, 200));
  }
  const std::vector<int> threads = !plan.gpu.empty()     ? std::vector<int>{0}
                                   : plan.threads.empty() ? std::vector<int>{std::max(1, ceilings.threads)}
                                                          : plan.threads;

  if (plan.device_id.empty() && plan.gpu.empty()) {
    probe::ProbeOptions po;
    po.sysfs_root = plan.sysfs_root;
    po.variant = plan.cpu_variant;
    for (const auto& [label, info] : models) {
      probe::KernelNeeds needs;
      for (int p : plan.n_prompt)
        for (int ub : plan.n_ubatch)
          if (p > 0) needs.prefill_tokens.insert(probe::prefill_kernel_tokens(p, ub));
      for (int k : spec_plan.lengths) needs.prefill_tokens.insert(k + 1);  // the verify batches
      needs.prefill_threads.insert(threads.begin(), threads.end());
      needs.decode_threads.insert(threads.begin(), threads.end());
      progress(fmt::format("measuring {}'s kernels (cached after the first run)", label));
      probe::ensure_model_kernels(ceilings, info, needs, po);
    }
    if (spec_plan.draft) {
      probe::KernelNeeds needs;
      needs.decode_threads.insert(threads.begin(), threads.end());
      progress(fmt::format("measuring the draft {}'s kernels (cached after the first run)",
                           spec_plan.draft->first));
      probe::ensure_model_kernels(ceilings, spec_plan.draft->second, needs, po);
    }
    if (plan.remeasure) ceilings.step_costs.clear();
    Environment env;
    env.cpu_variant = plan.cpu_variant;
    env.sysfs_root = plan.sysfs_root;
    // Under emulation each step-cost run takes minutes and times the emulator.
    if (!report.emulated) ensure_step_costs(ceilings, std::set<int>(threads.begin(), threads.end()), env, po, ctx);
  }

  const Checks checks = stored_checks(store.get(), device_id, plan.gpu);
  for (const auto& [label, info] : models)
    for (const auto& c : configs(plan, threads)) {
      const auto ds = check_spread(checks.decode, probe_spread(ceilings, info, c.threads, true));
      const auto ps = check_spread(checks.prefill, probe_spread(ceilings, info, c.threads, false));
      PredictRow row{
          label, info.dominant_type(), predict::predict(info, ceilings, c, ds, ps, memory_bytes), {}};
      if (spec_plan.draft)
        row.speculative = predict_speculation(info, spec_plan.draft->second, ceilings, c, spec_plan.lengths,
                                              plan.acceptance, spec_plan.measured, spec_plan.measured_basis,
                                              row.prediction.notes);
      report.rows.push_back(std::move(row));
    }
  return report;
}

json to_json(const std::vector<SpecRow>& rows) {
  json out = json::array();
  for (const auto& r : rows) {
    json j = {{"draft_max", r.draft_max},
              {"target_token_ms", r.costs.target_token_ms},
              {"draft_token_ms", r.costs.draft_token_ms},
              {"verify_ms", r.costs.verify_ms},
              {"break_even_acceptance", r.break_even ? json(*r.break_even) : json()}};
    if (!r.acceptance_basis.empty()) {
      j["acceptance"] = {
          {"alpha", r.alpha}, {"basis", r.acceptance_basis}, {"position_rates", r.position_rates}};
      j["expected_tokens"] = r.expected_tokens;
      j["speed_up"] = r.speed_up;
    }
    out.push_back(std::move(j));
  }
  return out;
}

json to_json(const PredictReport& r) {
  json rows = json::array();
  for (const auto& row : r.rows) {
    json j = predict::to_json(row.prediction);
    j["model"] = row.model;
    j["quant"] = row.quant;
    if (!row.speculative.empty()) j["speculative"] = to_json(row.speculative);
    rows.push_back(std::move(j));
  }
  return {
      {"kind", "predict"},      {"schema_version", 1}, {"device", r.device}, {"device_basis", r.device_basis},
      {"emulated", r.emulated}, {"notes", r.notes},    {"rows", rows},       {"draft", r.draft}};
}

}  // namespace edgeprobe::app
