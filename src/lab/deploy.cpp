#include "lab/deploy.h"

#include <filesystem>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "edgeprobe_version.h"
#include "model/gguf_info.h"

namespace edgeprobe::lab {
namespace {

namespace fs = std::filesystem;

// SHA-256 of a local file, computed once per path and process (models are large).
std::string local_sha256(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::string> cache;
  {
    const std::lock_guard lock(mutex);
    if (auto it = cache.find(path); it != cache.end()) return it->second;
  }
  const std::string sha = model::sha256_file(path);
  const std::lock_guard lock(mutex);
  return cache[path] = sha;
}

std::string run_checked(Transport& t, const Device& d, const std::string& command, const std::string& step,
                        double timeout_s = 120) {
  const SubprocessResult r = t.run(command, within(timeout_s));
  if (const std::string why = t.unreachable(r); !why.empty())
    throw_environment("{}: {}: {}", d.name, step, why);
  if (r.exit_code != 0)
    throw_environment("{}: {} failed (exit {}): {}", d.name, step, r.exit_code,
                      output_line(r.err.empty() ? r.out : r.err));
  return r.out;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// One file to `remote` through `remote.part`, verified on the device, then renamed;
// `marker` (a file holding the SHA-256) says it is complete. Returns false when the
// marker already matched and nothing was copied.
bool push_verified(Transport& t, const Device& d, const std::string& local, const std::string& remote,
                   const std::string& marker, const std::string& sha, double timeout_s) {
  const std::string q = shell_quote(remote), qm = shell_quote(marker), part = remote + ".part";
  const std::string have = trim(run_checked(t, d, "cat " + qm + " 2>/dev/null; true", "look for " + remote));
  if (have == sha) return false;
  const std::string dir = remote.substr(0, remote.rfind('/'));
  run_checked(t, d, "mkdir -p " + shell_quote(dir) + " && rm -f " + shell_quote(part) + " " + qm,
              "prepare " + remote);
  t.push(local, part, timeout_s);
  const std::string got = trim(run_checked(t, d, "sha256sum " + shell_quote(part) + " | cut -d ' ' -f 1",
                                           "SHA-256 of " + part, timeout_s));
  if (got != sha) {
    run_checked(t, d, "rm -f " + shell_quote(part), "remove " + part);
    throw_environment("{}: {} arrived with SHA-256 {} instead of {} (copy damaged; run deploy again)", d.name,
                      remote, got.empty() ? "(none: no sha256sum on the device?)" : got.substr(0, 16),
                      sha.substr(0, 16));
  }
  run_checked(t, d,
              "mv -f " + shell_quote(part) + " " + q + " && echo " + sha + " > " + qm + ".tmp && mv -f " +
                  qm + ".tmp " + qm,
              "rename " + part);
  return true;
}

}  // namespace

std::string bundle_name(const std::string& target) {
  return std::string("edgeprobe-") + kVersion + "-linux-" + target;
}

std::string bundle_file(const std::string& dist_dir, const std::string& target) {
  const std::string path = dist_dir + "/" + bundle_name(target) + ".tar.gz";
  if (!fs::exists(path))
    throw_environment("no bundle {} (build it with scripts/package.sh{}, or point --dist at it)", path,
                      target.starts_with("x86_64") ? "" : " --target " + target);
  return path;
}

DeployResult deploy(Transport& t, const Device& d, const DeviceState& state,
                    const std::vector<std::string>& models, const DeployOptions& options) {
  DeployResult out;
  if (d.transport == "local") {
    out.launcher = shell_join(self_command());  // as this edgeprobe was started (a bundle's loader too)
    for (const auto& m : models) out.models.emplace_back(m, m);
    return out;
  }
  if (state.target.empty())
    throw_environment("{}: no bundle for architecture '{}' (set arch: in the inventory)", d.name, state.arch);
  const std::string name = bundle_name(state.target);
  const std::string tarball = bundle_file(options.dist_dir, state.target);
  const std::string wd = d.workdir, dir = wd + "/" + name;
  DeployedFile bundle{"bundle", tarball, dir, local_sha256(tarball)};
  const std::string have = trim(run_checked(
      t, d, "cat " + shell_quote(dir + "/.complete") + " 2>/dev/null; true", "look for the bundle"));
  bundle.skipped = have == bundle.sha256;
  if (!bundle.skipped) {
    const std::string remote_tar = wd + "/" + name + ".tar.gz";
    push_verified(t, d, tarball, remote_tar, remote_tar + ".sha256", bundle.sha256, options.timeout_s);
    // Unpacked beside the final place and renamed into it: a half-unpacked bundle never
    // has .complete, and `check` reports only bundles that do.
    const std::string unpack = ".unpack-" + name, q = shell_quote(name);
    run_checked(t, d,
                "cd " + shell_quote(wd) + " && rm -rf " + unpack + " && mkdir " + unpack + " && tar -xzf " +
                    shell_quote(name + ".tar.gz") + " -C " + unpack + " && chmod 755 " + unpack + "/" + q +
                    "/edgeprobe && rm -rf " + q + " && mv " + unpack + "/" + q + " " + q + " && rmdir " +
                    unpack + " && echo " + bundle.sha256 + " > " + q + "/.complete && rm -f " + q +
                    ".tar.gz " + q + ".tar.gz.sha256",
                "unpack the bundle", options.timeout_s);
  }
  out.files.push_back(bundle);
  // sh, not the execute bit: storage that lost it (or an adb push that dropped it) still works.
  out.launcher = "sh " + shell_quote(dir + "/edgeprobe");

  for (const auto& m : models) {
    const std::string sha = local_sha256(m);
    const std::string remote = wd + "/models/" + sha.substr(0, 12) + "-" + fs::path(m).filename().string();
    DeployedFile f{fs::path(m).extension() == ".gguf" ? "model" : "data", m, remote, sha};
    f.skipped = !push_verified(t, d, m, remote, remote + ".sha256", sha, options.timeout_s);
    out.files.push_back(f);
    out.models.emplace_back(m, remote);
  }
  return out;
}

nlohmann::json to_json(const DeployResult& r) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : r.files)
    files.push_back({{"what", f.what},
                     {"local", f.local},
                     {"remote", f.remote},
                     {"sha256", f.sha256},
                     {"skipped", f.skipped}});
  return {{"files", files}, {"launcher", r.launcher}};
}

std::vector<DeviceDeploy> deploy_devices(const std::vector<Device>& devices,
                                         const std::vector<std::string>& models,
                                         const DeployOptions& options) {
  std::vector<DeviceDeploy> out;
  for (const auto& d : devices) {
    DeviceDeploy r{d.name, {}, "", 0};
    try {
      auto t = make_transport(d);
      const auto state = read_state(*t, d);
      if (!state.reachable) throw_environment("{}: unreachable: {}", d.name, state.why_not);
      r.result = deploy(*t, d, state, models, options);
    } catch (const Error& e) {
      r.error = e.what();
      r.exit_code = e.exit_code();
    }
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json to_json(const std::vector<DeviceDeploy>& results) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : results) {
    if (r.error.empty())
      out.push_back({{"device", r.device}, {"deploy", to_json(r.result)}});
    else
      out.push_back({{"device", r.device}, {"error", r.error}});
  }
  return out;
}

}  // namespace edgeprobe::lab
