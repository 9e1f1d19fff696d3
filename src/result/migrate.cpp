#include "result/migrate.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <array>
#include <memory>
#include <string_view>

#include "core/bounded_input.h"
#include "core/error.h"
#include "core/text.h"
#include "result/result.h"

namespace edgeprobe::result {
namespace {

using nlohmann::json;

std::string sha256_hex(const std::string& text) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), text.data(), text.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1)
    throw_environment("OpenSSL SHA-256 is unavailable");
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

const json& object_at(const json& parent, const char* key) {
  static const json empty = json::object();
  const auto it = parent.find(key);
  return it != parent.end() && it->is_object() ? *it : empty;
}

std::string string_at(const json& parent, const char* key) {
  const auto it = parent.find(key);
  return it != parent.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// v1 recorded uname as "Linux 6.1.0 x86_64": the machine field is the last word.
std::string arch_from_kernel(const std::string& kernel) {
  static constexpr std::array<std::string_view, 7> kKnown{"x86_64", "aarch64", "arm64", "armv7l",
                                                          "armv8l", "riscv64", "i686"};
  const size_t space = kernel.find_last_of(' ');
  const std::string_view last = space == std::string::npos ? std::string_view(kernel)
                                                           : std::string_view(kernel).substr(space + 1);
  for (std::string_view arch : kKnown)
    if (last == arch) return std::string(arch);
  return "";
}

}  // namespace

std::string device_id_from(const std::string& machine_key, const std::string& cpu_model) {
  return "dev-" + sha256_hex(machine_key + "\n" + cpu_model).substr(0, 16);
}

json upgrade_provenance(const json& provenance) {
  if (!provenance.is_object() || provenance.contains("engine") || provenance.contains("device")) return provenance;
  const json& llama = object_at(provenance, "llama_cpp");
  const json& cpu = object_at(provenance, "cpu");
  const json& host = object_at(provenance, "host");
  const std::string hostname = string_at(host, "hostname");
  const std::string cpu_model = string_at(cpu, "model");
  const std::string kernel = string_at(host, "kernel");
  const json& features = object_at(cpu, "ggml_variant_features");

  json out = provenance;
  // Only the objects read above are dropped: a key of another shape is data we do not
  // understand, so it stays.
  for (const char* key : {"llama_cpp", "cpu", "host"})
    if (out.contains(key) && out[key].is_object()) out.erase(key);
  out["engine"] = {{"name", "llama.cpp"},
                   {"kind", "in-process"},
                   {"version", string_at(llama, "version")},
                   {"commit", string_at(llama, "commit")},
                   {"cpu_variant", string_at(cpu, "ggml_variant")},
                   {"cpu_variant_library", string_at(cpu, "ggml_variant_library")},
                   {"cpu_variant_features", features}};
  out["device"] = {{"id", hostname.empty() && cpu_model.empty() ? "" : device_id_from(hostname, cpu_model)},
                   {"arch", arch_from_kernel(kernel)},
                   {"cpu_model", cpu_model},
                   {"soc", ""},
                   {"board", ""},
                   {"os", ""},
                   {"kernel", kernel},
                   {"hostname", hostname}};
  return out;
}

json upgrade_report(const json& report) {
  if (!report.is_object()) return report;
  const auto version = report.find("schema_version");
  if (version == report.end() || !version->is_number_integer() || version->get<int64_t>() != 1) return report;
  json out = report;
  out["schema_version"] = 2;
  if (out.contains("provenance")) out["provenance"] = upgrade_provenance(out["provenance"]);
  if (out.contains("run") && out["run"].is_object() && out["run"].contains("provenance"))
    out["run"]["provenance"] = upgrade_provenance(out["run"]["provenance"]);
  return out;
}

std::string document_kind(const nlohmann::json& d) {
  if (!d.is_object()) return "";
  if (d.contains("kind") && d["kind"].is_string()) {
    const std::string kind = d["kind"];
    return kind == "bench" || kind == "session" || kind == "doctor" ? kind : "";
  }
  // Before the kind was written: a doctor report wraps its findings in "doctor", a session
  // lists "configs", a bench lists "results".
  if (d.contains("doctor") && d["doctor"].is_object()) return "doctor";
  if (d.contains("configs") && d["configs"].is_array()) return "session";
  if (d.contains("results") && d["results"].is_array()) return "bench";
  return "";
}

void check_schema_version(const json& document, std::string_view name) {
  if (!document.is_object() || !document.contains("schema_version")) return;  // the oldest files carry none
  const json& v = document["schema_version"];
  if (!v.is_number_integer())
    throw_bad_input("{}: schema_version must be an integer, got {}", name,
                    one_line(v.dump(-1, ' ', false, json::error_handler_t::replace), 80));
  const bool newer = v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(kSchemaVersion)
                                            : v.get<int64_t>() > kSchemaVersion;
  if (newer)
    throw_bad_input("{}: result schema_version {} is newer than this edgeprobe reads (1 to {}): read it with the "
                    "edgeprobe that wrote it, or a newer one",
                    name, v.dump(), kSchemaVersion);
  if (v.get<int64_t>() < 1)
    throw_bad_input("{}: result schema_version {} is not one edgeprobe ever wrote (1 to {})", name, v.dump(),
                    kSchemaVersion);
}

json read_result_file(const std::string& path, std::string_view what) {
  const json document = read_json_bounded(path, what, kMaxResultBytes, kMaxResultDepth);
  check_schema_version(document, source_name(path));
  return upgrade_report(document);
}

}  // namespace edgeprobe::result
