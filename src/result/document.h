#pragma once
// Any result edgeprobe writes, as one closed type: what a subcommand's `-o json` printed,
// a stored run read back, a result file. Readers switch on the alternative, never on keys.
#include <nlohmann/json.hpp>

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

}  // namespace edgeprobe::result
