#include "runner/provenance.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#include "core/fs.h"
#include "edgeprobe_version.h"
#include "platform/cpu_features.h"
#include "probe/storage.h"

namespace edgeprobe::runner {

std::string utc_now_rfc3339() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

result::Provenance make_provenance(const engine::CpuBackendInfo& backend, const std::string& command_line) {
  result::Provenance p;
  p.edgeprobe_version = kVersion;
  p.llama_cpp_version = kLlamaCppVersion;
  p.llama_cpp_commit = kLlamaCppCommit;
  p.cpu_model = platform::cpu_model_name(FsRoot("/"));
  p.cpu_variant = backend.variant;
  p.cpu_variant_library = backend.library_path;
  p.cpu_variant_features = backend.features;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  p.hostname = host;
  utsname u{};
  if (uname(&u) == 0) p.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
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
