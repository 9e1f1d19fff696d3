#pragma once
// Any result edgeprobe writes, as one closed type: what a subcommand's `-o json` printed,
// a stored run read back, a result file. Readers switch on the alternative, never on keys.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <variant>

#include "result/doctor.h"
#include "result/result.h"
#include "result/session.h"

namespace edgeprobe::result {

using Document = std::variant<BenchReport, SessionReport, DoctorResult>;

const char* kind_of(const Document& document);  // "bench", "session" or "doctor", as its JSON names it
nlohmann::json to_json(const Document& document);

// A document of the current schema (upgrade older ones with result/migrate.h first), read
// by its kind (migrate.h's document_kind, the one place that tells a shape written before
// documents named their kind). Error(kBadInput) for a document of no kind edgeprobe writes;
// a field of the wrong type throws as each kind's reader does.
Document document_from_json(const nlohmann::json& j);

// What every reader needs before it reads a field, and all that the lenient readers
// (compare, report, explain) need: an object whose kind, named or told by its shape, is one
// edgeprobe writes ("kind" a string), and a bench's "results" or a session's "configs"
// list. Error(kBadInput) naming the field.
void check_document(const nlohmann::json& j);

// The same for a document from outside (a result file, a baseline), every refusal one
// kBadInput line starting with `name` and naming the field: a "kind" that is not one
// edgeprobe writes, a bench without its "results" list, a session without "configs", a
// field of a type the readers never take.
Document document_from_json(const nlohmann::json& j, std::string_view name);

// Where every reader of a result file starts (report, compare, export, explain, doctor
// --baseline, predict --check, predict-disagg --result): read_upgraded_result_file
// (migrate.h: bounds, version, field types), then check_document, so that all refuse the
// same documents with the same line (the file, then the field) before anything is rendered
// from them. The upgraded JSON, for readers that walk it.
nlohmann::json read_result_file(const std::string& path, std::string_view what);

}  // namespace edgeprobe::result
