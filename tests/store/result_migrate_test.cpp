// Result schema v1 -> v2 (result/migrate.h): the provenance upgrade the store migration,
// old result files and new runs' device ids share.
#include "result/migrate.h"

#include <gtest/gtest.h>

namespace edgeprobe::result {
namespace {

using nlohmann::json;

// Shaped as result::to_json(Provenance) wrote it at schema v1, with bench's extras.
json v1_provenance() {
  return {{"edgeprobe_version", "0.4.0"},
          {"llama_cpp", {{"version", "b6500"}, {"commit", "80fb11a"}}},
          {"cpu",
           {{"model", "Qualcomm Kryo 585"},
            {"ggml_variant", "armv8.2_2"},
            {"ggml_variant_library", "/opt/lib/libggml-cpu-armv8.2_2.so"},
            {"ggml_variant_features", {{"DOTPROD", "1"}, {"FP16_VA", "1"}}}}},
          {"host", {{"hostname", "pixel-lab-03"}, {"kernel", "Linux 6.1.57-android14 aarch64"}}},
          {"started_at_utc", "2025-03-01T10:00:00Z"},
          {"command_line", "edgeprobe bench -m tiny.gguf"},
          {"models", {{{"path", "/m/tiny.gguf"}, {"sha256", "ab12"}}}},
          {"isa_gap", {{"missing", json::array({"i8mm"})}}},
          {"llama_log", json::array({"load time = 12 ms"})}};
}

TEST(DeviceId, IsDevPlusSixteenHexDigitsOfSha256OfKeyNewlineCpu) {
  // printf 'pixel-lab-03\nQualcomm Kryo 585' | sha256sum -> 1d68bdb58c48314d...
  EXPECT_EQ(device_id_from("pixel-lab-03", "Qualcomm Kryo 585"), "dev-1d68bdb58c48314d");
  // printf 'h\n' | sha256sum -> 91ee5e9f42ba3d34... (empty CPU model)
  EXPECT_EQ(device_id_from("h", ""), "dev-91ee5e9f42ba3d34");
  EXPECT_NE(device_id_from("h", "cpu a"), device_id_from("h", "cpu b"));
}

TEST(UpgradeProvenance, V1BecomesV2FieldByField) {
  const json expected = {
      {"edgeprobe_version", "0.4.0"},
      {"engine",
       {{"name", "llama.cpp"},
        {"kind", "in-process"},
        {"version", "b6500"},
        {"commit", "80fb11a"},
        {"cpu_variant", "armv8.2_2"},
        {"cpu_variant_library", "/opt/lib/libggml-cpu-armv8.2_2.so"},
        {"cpu_variant_features", {{"DOTPROD", "1"}, {"FP16_VA", "1"}}}}},
      {"device",
       {{"id", "dev-1d68bdb58c48314d"},
        {"arch", "aarch64"},
        {"cpu_model", "Qualcomm Kryo 585"},
        {"soc", ""},
        {"board", ""},
        {"os", ""},
        {"kernel", "Linux 6.1.57-android14 aarch64"},
        {"hostname", "pixel-lab-03"}}},
      {"started_at_utc", "2025-03-01T10:00:00Z"},
      {"command_line", "edgeprobe bench -m tiny.gguf"},
      {"models", {{{"path", "/m/tiny.gguf"}, {"sha256", "ab12"}}}},
      {"isa_gap", {{"missing", json::array({"i8mm"})}}},
      {"llama_log", json::array({"load time = 12 ms"})}};
  EXPECT_EQ(upgrade_provenance(v1_provenance()), expected) << upgrade_provenance(v1_provenance()).dump(1);
}

TEST(UpgradeProvenance, IsIdempotent) {
  const json once = upgrade_provenance(v1_provenance());
  EXPECT_EQ(upgrade_provenance(once), once);
  // A v2 provenance from the new runner, whatever its device fields, is left alone.
  const json v2 = {{"engine", {{"name", "llama.cpp"}}}, {"device", {{"id", "dev-x"}}}, {"host", {{"hostname", "h"}}}};
  EXPECT_EQ(upgrade_provenance(v2), v2);
}

TEST(UpgradeProvenance, ToleratesMissingAndMistypedFields) {
  json p = v1_provenance();
  p.erase("host");
  p["cpu"].erase("ggml_variant_features");
  p["llama_cpp"]["version"] = 6500;  // not a string: unknown
  const json up = upgrade_provenance(p);
  EXPECT_EQ(up["engine"]["version"], "");
  EXPECT_EQ(up["engine"]["commit"], "80fb11a");
  EXPECT_EQ(up["engine"]["cpu_variant_features"], json::object());
  EXPECT_EQ(up["device"]["hostname"], "");
  EXPECT_EQ(up["device"]["arch"], "");
  EXPECT_EQ(up["device"]["id"], device_id_from("", "Qualcomm Kryo 585"));
  EXPECT_FALSE(up.contains("llama_cpp"));
  EXPECT_FALSE(up.contains("cpu"));

  // Nothing that identifies a device: no id rather than one everybody would share.
  const json empty = upgrade_provenance(json::object());
  EXPECT_EQ(empty["device"]["id"], "");
  EXPECT_EQ(empty["engine"]["name"], "llama.cpp");

  // A "host" that is not the v1 object is data we do not understand: kept.
  const json odd = upgrade_provenance({{"host", "bare-string"}});
  EXPECT_EQ(odd["host"], "bare-string");
  EXPECT_EQ(odd["device"]["hostname"], "");

  EXPECT_EQ(upgrade_provenance(json("text")), json("text"));
  EXPECT_TRUE(upgrade_provenance(json(nullptr)).is_null());
}

TEST(UpgradeProvenance, ArchComesOnlyFromAKnownMachineName) {
  auto arch_of = [](const std::string& kernel) {
    return upgrade_provenance({{"host", {{"hostname", "h"}, {"kernel", kernel}}}})["device"]["arch"];
  };
  EXPECT_EQ(arch_of("Linux 6.8.0-45-generic x86_64"), "x86_64");
  EXPECT_EQ(arch_of("Linux 5.10.0 armv7l"), "armv7l");
  EXPECT_EQ(arch_of("Linux 5.10.0 sparc64"), "");
  EXPECT_EQ(arch_of("x86_64"), "x86_64");
  EXPECT_EQ(arch_of(""), "");
}

TEST(UpgradeReport, BenchJsonAndJsonlRowsMoveToVersion2) {
  const json results = json::array({{{"test", "tg64"}, {"repetitions", json::array()}}});
  const json bench = {{"schema_version", 1}, {"provenance", v1_provenance()}, {"results", results}};
  const json up = upgrade_report(bench);
  EXPECT_EQ(up["schema_version"], 2);
  EXPECT_EQ(up["provenance"], upgrade_provenance(v1_provenance()));
  EXPECT_EQ(up["results"], results);

  const json row = {{"schema_version", 1}, {"test", "pp512"}, {"provenance", v1_provenance()}};
  const json row_up = upgrade_report(row);
  EXPECT_EQ(row_up["schema_version"], 2);
  EXPECT_EQ(row_up["provenance"]["device"]["id"], "dev-1d68bdb58c48314d");
  EXPECT_EQ(row_up["test"], "pp512");

  // A stored-run export carries its provenance under "run".
  const json exported = {{"schema_version", 1}, {"run", {{"id", 4}, {"provenance", v1_provenance()}}}};
  EXPECT_EQ(upgrade_report(exported)["run"]["provenance"]["engine"]["commit"], "80fb11a");
}

TEST(UpgradeReport, Version2AndUnversionedDocumentsPassThrough) {
  const json v2 = {{"schema_version", 2}, {"provenance", v1_provenance()}};  // trusted as it says
  EXPECT_EQ(upgrade_report(v2), v2);
  const json unversioned = {{"provenance", v1_provenance()}};
  EXPECT_EQ(upgrade_report(unversioned), unversioned);
  EXPECT_EQ(upgrade_report(json::array()), json::array());
}

}  // namespace
}  // namespace edgeprobe::result
