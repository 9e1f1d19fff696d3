#pragma once
#include <map>
#include <string>
#include <vector>

#include "app/job.h"
#include "model/gguf_info.h"
#include "result/result.h"

namespace edgeprobe::app {

// The model files of a plan, each read once. Every job resolves its models here: a
// missing, truncated or hostile file fails before anything runs, with one clear line
// (llama.cpp aborts on some hostile files instead of returning an error, so the header
// is checked by our own reader first).
class ModelSet {
 public:
  // "" is the built-in default and "synth:SHAPE[:QUANT]" a synthesized model (written on
  // first use, then cached); anything else is a path. Returns the resolved paths.
  static std::string resolve(const std::string& spec, JobSink* sink);
  // Resolves a spec (once per distinct spec) and adds its file; returns the resolved path.
  std::string add_spec(const std::string& spec, JobSink* sink);
  // Adds a resolved path (once) and returns its index.
  int add(const std::string& path);
  int index_of(const std::string& path) const { return index_.at(path); }
  const std::vector<model::GgufInfo>& infos() const { return infos_; }
  const model::GgufInfo& info(size_t i) const { return infos_.at(i); }
  // Identity (SHA-256 when `hash`, size, shape, tensor types) of each model, in order.
  std::vector<result::ModelIdentity> identities(bool hash, JobSink* sink) const;

 private:
  std::vector<model::GgufInfo> infos_;
  std::map<std::string, int> index_;
  std::map<std::string, std::string> resolved_;  // spec -> path
};

// With --endpoint the model is the server's: a model spec of "" (the default) becomes
// "endpoint:NAME" and no file is resolved; a file given with -m is still read and hashed
// (the file the server serves, so `compare` can check it is the same model).
std::string endpoint_model_path(const std::string& api_model);
bool is_endpoint_model(const std::string& path);
// The endpoint's model as provenance: the name it serves and what its model list says.
result::ModelIdentity endpoint_model_identity(const result::EngineIdentity& engine);

}  // namespace edgeprobe::app
