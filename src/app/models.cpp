#include "app/models.h"

#include "model/synth.h"
#include "runner/provenance.h"

namespace edgeprobe::app {

std::string ModelSet::resolve(const std::string& spec, JobSink* sink) {
  if (sink && (spec.empty() || spec.starts_with("synth:")))
    sink->progress("preparing the synthesized model (written on first use, then cached)");
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

}  // namespace edgeprobe::app
