#include "runner/provenance.h"

#include "core/clock.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/fs.h"
#include "edgeprobe_version.h"
#include "platform/device_identity.h"
#include "probe/storage.h"

namespace edgeprobe::runner {

result::Provenance make_provenance(const result::EngineIdentity& engine, const std::string& command_line) {
  result::Provenance p;
  p.edgeprobe_version = kVersion;
  const BuildInfo& build = build_info();
  p.build = {build.git_commit, build.git_dirty, build.build_type, build.compiler};
  p.engine = engine;
  p.device = platform::detect_device(FsRoot("/"));
  p.started_at_utc = utc_now_rfc3339();
  p.command_line = command_line;
  return p;
}

result::ModelIdentity model_identity(const model::GgufInfo& info, bool hash) {
  result::ModelIdentity m;
  m.path = info.path;
  if (hash) {
    // Hashing reads the whole file: put the page cache back as it was, so that the first
    // load bench measures next is as cold as the user left the file.
    const auto before = probe::page_residency(info.path);
    m.sha256 = model::sha256_file(info.path);
    if (!before.empty()) probe::evict_pages_not_in(info.path, before);
  }
  m.size_bytes = info.file_bytes;
  m.n_params = info.n_params();
  m.architecture = info.shape.architecture;
  m.name = info.name;
  m.dominant_type = info.dominant_type();
  m.bits_per_weight = info.bits_per_weight();
  for (const auto& [type, s] : info.type_histogram()) m.tensor_types[type] = {s.tensors, s.bytes, s.params};
  m.n_layer = info.shape.n_layer;
  m.n_embd = info.shape.n_embd;
  m.n_ff = info.shape.n_ff;
  m.n_head = info.shape.n_head;
  m.n_head_kv = info.shape.n_head_kv;
  m.n_vocab = info.shape.n_vocab;
  return m;
}

}  // namespace edgeprobe::runner
