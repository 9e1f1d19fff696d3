#pragma once
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/json_read.h"

namespace edgeprobe::report {

// What a reporter writes for one JSON value in a table cell: "" for null, 1/0 for
// booleans, six significant digits for reals.
inline std::string scalar(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return fmt::format("{:.6g}", v.get<double>());
  return v.dump();
}

// The value at a JSON pointer, or null when the document has none there.
using json_read::at;

// The threads that ran the model, as a cell: the configuration's own in-process; behind an
// endpoint the server's as it stated them (provenance details.server_side), "n/a" when it
// did not: the client's -t is not what the server ran.
inline std::string threads_cell(const nlohmann::json& provenance, int configured) {
  if (at(provenance, "/engine/kind") != "endpoint") return std::to_string(configured);
  const nlohmann::json& t = at(provenance, "/engine/details/server_side/threads");
  return t.is_number_integer() ? std::to_string(t.get<int64_t>()) : "n/a";
}

// Where prefills ran under --prefill-remote, from their records (docs/disaggregation.md):
// "remote", "local (fallback)", or both counted when they differ; "" when none holds one.
inline std::string prefill_path(const std::vector<const nlohmann::json*>& records) {
  int remote = 0, fallback = 0;
  for (const auto* r : records) {
    if (!r || !r->is_object() || !r->contains("mode")) continue;
    ++((*r)["mode"] == "remote" ? remote : fallback);
  }
  if (remote + fallback == 0) return "";
  if (fallback == 0) return "remote";
  if (remote == 0) return "local (fallback)";
  return fmt::format("{} remote, {} local (fallback)", remote, fallback);
}

}  // namespace edgeprobe::report
