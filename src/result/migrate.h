#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

#include "platform/device_identity.h"

namespace edgeprobe::result {

// Result schema v1 -> v2. Pure functions on JSON, so the store migration, `compare` of old
// files and tests share one upgrade.
//
// v1 provenance: edgeprobe_version, llama_cpp{version, commit}, cpu{model, ggml_variant,
// ggml_variant_library, ggml_variant_features}, host{hostname, kernel}, started_at_utc,
// command_line, models[], plus extra top-level keys (cpu_features, isa_gap, ...).
// v2 moves the engine and device facts into "engine" and "device" objects and drops
// llama_cpp, cpu and host; every other key is kept as it is.

// v1 runs are given ids by platform's rule (device_id_from), with the hostname as the
// machine key.
using platform::device_id_from;

// A v1 provenance object becomes v2; v2 input (it has "engine" or "device") and anything
// that is not an object come back unchanged. Missing or mistyped v1 fields become "" (an
// empty object for the feature map); when neither hostname nor CPU model is known the
// device id is "" too, since any id would claim a device nobody identified.
nlohmann::json upgrade_provenance(const nlohmann::json& provenance);

// A whole result document at schema_version 1 (a bench JSON file, one jsonl row, or a
// stored-run export with run.provenance) becomes schema_version 2 with its provenance
// upgraded; documents at version 2 or later, or without a version, pass through.
nlohmann::json upgrade_report(const nlohmann::json& report);

// Which result a document is: "bench", "session" or "doctor"; "" for anything else. Every
// document edgeprobe writes names its kind ("kind" at the top, a stored run's export too);
// one written before bench and doctor documents did is told by its shape, here and
// nowhere else, so that no reader guesses on its own.
std::string document_kind(const nlohmann::json& document);

// Result files are outside bytes (another device's, a colleague's, a download): read with
// bounds (core/bounded_input.h). 512 MiB holds tens of millions of samples; no document
// edgeprobe writes nests deeper than about 12 levels.
inline constexpr size_t kMaxResultBytes = 512u << 20;
inline constexpr int kMaxResultDepth = 128;

// Refuses (kBadInput, one line naming `name`) a document whose schema_version is not an
// integer, or is newer than this build reads: rendering or comparing fields whose meaning
// changed would show numbers that mean something else.
void check_schema_version(const nlohmann::json& document, std::string_view name);

// A result file (or "-", stdin) read within those bounds, its version checked and
// upgraded to the current schema, each field the readers use checked for its type. `what`
// names it in errors ("result file", "baseline"). Readers take read_result_file
// (document.h), which reads it through the typed reader too.
nlohmann::json read_upgraded_result_file(const std::string& path, std::string_view what);
// The same for a document received as text (a hub's submission), named `name` in errors;
// the caller bounds its size.
nlohmann::json read_upgraded_result_text(std::string_view text, std::string_view name);
// The version check, upgrade and field types of a document already parsed within bounds.
nlohmann::json upgraded_result(const nlohmann::json& document, std::string_view name);

}  // namespace edgeprobe::result
