#include "app/models.h"

#include "model/synth.h"
#include "runner/provenance.h"

namespace edgeprobe::app {

std::string ModelSet::resolve(const std::string& spec, JobSink* sink) {
  if (sink && (spec.empty() || spec.starts_with("synth:")))
    sink->progress("preparing the synthesized model (written on first use, then cached)");
  if (sink && spec.starts_with("trained:"))
    sink->progress(
        "preparing the trained model (trained once, minutes, unless scripts/setup.sh made it; then cached)");
  return model::resolve_model_spec(spec);
}

std::string ModelSet::add_spec(const std::string& spec, JobSink* sink) {
  auto it = resolved_.find(spec);
  if (it == resolved_.end()) it = resolved_.emplace(spec, resolve(spec, sink)).first;
  add(it->second);
  return it->second;
}

int ModelSet::add(const std::string& path) {
  auto it = index_.find(path);
  if (it != index_.end()) return it->second;
  infos_.push_back(model::read_gguf_info(path));
  const int index = static_cast<int>(infos_.size()) - 1;
  index_[path] = index;
  return index;
}

std::vector<result::ModelIdentity> ModelSet::identities(bool hash, JobSink* sink) const {
  std::vector<result::ModelIdentity> out;
  for (const auto& info : infos_) {
    if (sink && hash) sink->progress("hashing " + info.path);
    out.push_back(runner::model_identity(info, hash));
  }
  return out;
}

std::string endpoint_model_path(const std::string& api_model) { return "endpoint:" + api_model; }
bool is_endpoint_model(const std::string& path) { return path.starts_with("endpoint:"); }

result::ModelIdentity endpoint_model_identity(const result::EngineIdentity& engine) {
  result::ModelIdentity m;
  const auto& d = engine.details;
  m.path = endpoint_model_path(d.value("api_model", ""));
  m.name = d.value("server_model", "");
  if (d.contains("model_meta") && d["model_meta"].is_object()) {
    const auto& meta = d["model_meta"];
    m.size_bytes = meta.value("size", uint64_t{0});
    m.n_params = meta.value("n_params", uint64_t{0});
    m.n_vocab = meta.value("n_vocab", int64_t{0});
    m.n_embd = meta.value("n_embd", int64_t{0});
  }
  return m;
}

}  // namespace edgeprobe::app
