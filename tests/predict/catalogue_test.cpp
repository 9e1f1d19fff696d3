// The catalogue reader (src/predict/catalogue.h) on the shipped data/predict files and on
// hand-made bad ones: every entry has a source, unknown keys and wrong types are refused with
// one line naming the file and the entry, a truncated or hostile file is refused, and the
// fit/validation split is the one its stated rule gives.
#include "predict/catalogue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/error.h"

namespace {

using edgeprobe::Error;
using nlohmann::json;
namespace cat = edgeprobe::predict::catalogue;

const std::string kDir = EDGEPROBE_PREDICT_DATA_DIR;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The message of the Error `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2) << e.what();
    return e.what();
  }
  return "";
}

json measurement() {
  return json::parse(
      R"J({"id": "m001", "device": "dev-a", "backend": "cpu", "threads": 4, "n_gpu_layers": null,
    "model": {"name": "Llama 3.2 3B", "params_b": 3.21, "file_gib": 1.87}, "quant": "q4_k_m", "test": "tg128",
    "phase": "decode", "tokens_per_s": 7.68, "llama_cpp_build": "936918514 (10334)", "date": "2026-09-10",
    "source": {"url": "https://example.org/issue/1", "locator": "table row 3"}, "notes": null, "split": "fit"})J");
}

std::string measurements_doc(const json& item) {
  json doc = {{"schema", "edgeprobe.predict.measurements/1"},
              {"description", "d"},
              {"split_rule", "r"},
              {"measurements", json::array({item})}};
  return doc.dump();
}

json device() {
  return json::parse(R"J({"name": "Device A", "aliases": ["A"], "class": "arm-board",
    "memory": {"bandwidth_gbs": {"value": 17.0, "source": {"url": "https://example.org/spec", "locator": "memory row"}},
               "size_gb": null, "type": "LPDDR4X", "derived_bandwidth_gbs": null},
    "cpu": {"clusters": [{"core": "Cortex-A76", "count": 4, "max_ghz": 2.4}], "source": {"url": "https://example.org/spec", "locator": "cpu row"}},
    "gpu": null, "notes": null})J");
}

std::string devices_doc(const json& d, const std::string& key = "dev-a") {
  json doc = {{"schema", "edgeprobe.predict.devices/1"}, {"description", "d"}, {"devices", {{key, d}}}};
  return doc.dump();
}

// zlib's CRC-32, for the split rule.
uint32_t crc32(const std::string& s) {
  uint32_t c = 0xFFFFFFFFu;
  for (const unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

TEST(Catalogue, ShippedFilesLoadAndEveryEntryHasASource) {
  const cat::Catalogue c = cat::load(kDir + "/devices.json", kDir + "/measurements.json");
  EXPECT_GE(c.measurements.size(), 80u);
  EXPECT_GE(c.devices.size(), 20u);
  EXPECT_FALSE(c.split_rule.empty());
  size_t validation = 0;
  std::set<std::string> validation_devices, backends;
  std::set<std::string> phases;
  for (const cat::Measurement& m : c.measurements) {
    EXPECT_FALSE(m.source.url.empty()) << m.id;
    EXPECT_FALSE(m.source.locator.empty()) << m.id;
    if (m.split == "validation") {
      ++validation;
      validation_devices.insert(m.device);
      backends.insert(m.backend);
      phases.insert(m.phase);
    }
  }
  // What issue 47's benchmark needs from the held-out set.
  EXPECT_GE(validation, 40u);
  EXPECT_GE(validation_devices.size(), 15u);
  EXPECT_TRUE(backends.count("cpu"));
  EXPECT_GT(backends.size(), 1u);
  EXPECT_EQ(phases, (std::set<std::string>{"decode", "prefill"}));
  for (const auto& [key, d] : c.devices) {
    if (d.bandwidth_gbs) {
      EXPECT_FALSE(d.bandwidth_gbs->source.url.empty()) << key;
    }
    if (d.cpu) {
      EXPECT_FALSE(d.cpu->source.url.empty()) << key;
    }
    if (d.gpu) {
      EXPECT_FALSE(d.gpu->source.url.empty()) << key;
    }
  }
}

TEST(Catalogue, ShippedSplitIsTheOneItsRuleGives) {
  // Within each class, devices by crc32(key) then key; the first round(0.4 n) are validation,
  // at least 1 when the class has 2 or more devices (data/predict/README.md).
  const cat::Catalogue c = cat::load(kDir + "/devices.json", kDir + "/measurements.json");
  std::map<std::string, std::vector<std::string>> by_class;
  for (const auto& [key, d] : c.devices) by_class[d.device_class].push_back(key);
  std::set<std::string> validation;
  for (auto& [cls, keys] : by_class) {
    std::sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
      return std::make_pair(crc32(a), a) < std::make_pair(crc32(b), b);
    });
    const size_t n = keys.size();
    const size_t nv =
        n < 2 ? 0 : std::max<size_t>(1, static_cast<size_t>(std::nearbyint(0.4 * static_cast<double>(n))));
    validation.insert(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(nv));
  }
  for (const cat::Measurement& m : c.measurements)
    EXPECT_EQ(m.split, validation.count(m.device) ? "validation" : "fit") << m.id << " " << m.device;
}

TEST(Catalogue, AGoodHandMadePairParses) {
  const auto devices = cat::parse_devices(devices_doc(device()), "devices.json");
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_DOUBLE_EQ(*devices.at("dev-a").bandwidth_gbs->value, 17.0);
  EXPECT_EQ(devices.at("dev-a").cpu->clusters.at(0).count, 4);
  const auto ms = cat::parse_measurements(measurements_doc(measurement()), "measurements.json");
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].threads, 4);
  EXPECT_FALSE(ms[0].n_gpu_layers.has_value());
}

TEST(Catalogue, UnknownKeysAreRefusedNamingFileAndEntry) {
  json m = measurement();
  m["tokens_per_sec"] = 7.68;
  std::string e = error_of([&] { cat::parse_measurements(measurements_doc(m), "measurements.json"); });
  EXPECT_NE(e.find("measurements.json: m001: unknown key 'tokens_per_sec'"), std::string::npos) << e;

  m = measurement();
  m["source"]["page"] = 3;
  e = error_of([&] { cat::parse_measurements(measurements_doc(m), "measurements.json"); });
  EXPECT_NE(e.find("m001.source: unknown key 'page'"), std::string::npos) << e;

  json d = device();
  d["memory"]["bandwidth"] = 17;
  e = error_of([&] { cat::parse_devices(devices_doc(d), "devices.json"); });
  EXPECT_NE(e.find("devices.json: dev-a.memory: unknown key 'bandwidth'"), std::string::npos) << e;
}

TEST(Catalogue, AnEntryWithoutItsSourceIsRefused) {
  json m = measurement();
  m.erase("source");
  EXPECT_NE(error_of([&] {
              cat::parse_measurements(measurements_doc(m), "m.json");
            }).find("m001: missing key 'source'"),
            std::string::npos);
  m = measurement();
  m["source"]["url"] = "";
  EXPECT_NE(error_of([&] { cat::parse_measurements(measurements_doc(m), "m.json"); }).find("'url' is empty"),
            std::string::npos);
  json d = device();
  d["memory"]["bandwidth_gbs"].erase("source");
  EXPECT_NE(error_of([&] {
              cat::parse_devices(devices_doc(d), "d.json");
            }).find("dev-a.memory.bandwidth_gbs: missing key 'source'"),
            std::string::npos);
  d = device();
  d["cpu"]["source"] = nullptr;
  EXPECT_NE(error_of([&] {
              cat::parse_devices(devices_doc(d), "d.json");
            }).find("dev-a.cpu.source: expected an object"),
            std::string::npos);
}

TEST(Catalogue, TypesAndUnitsAreChecked) {
  const auto refused = [](json m, const std::string& why) {
    const std::string e = error_of([&] { cat::parse_measurements(measurements_doc(m), "m.json"); });
    EXPECT_NE(e.find(why), std::string::npos) << "expected '" << why << "', got '" << e << "'";
  };
  json m = measurement();
  m["tokens_per_s"] = "7.68";
  refused(m, "'tokens_per_s' must be a number (tokens/s)");
  m = measurement();
  m["tokens_per_s"] = -1;
  refused(m, "'tokens_per_s' = -1 is outside");
  m = measurement();
  m["threads"] = 2.5;
  refused(m, "'threads' must be an integer");
  m = measurement();
  m["phase"] = "prefill";
  refused(m, "'phase' = 'prefill' does not match test 'tg128'");
  m = measurement();
  m["backend"] = "npu";
  refused(m, "'backend' = 'npu' is not one of");
  m = measurement();
  m["split"] = "train";
  refused(m, "'split' = 'train' is not one of");
  m = measurement();
  m["model"]["params_b"] = 0;
  refused(m, "m001.model: 'params_b' = 0 is outside");

  json d = device();
  d["memory"]["bandwidth_gbs"]["value"] = 1e9;
  std::string e = error_of([&] { cat::parse_devices(devices_doc(d), "d.json"); });
  EXPECT_NE(e.find("'value' = 1000000000 is outside (0, 20000] GB/s"), std::string::npos) << e;
  d = device();
  d["memory"]["bandwidth_gbs"]["value"] = nullptr;
  e = error_of([&] { cat::parse_devices(devices_doc(d), "d.json"); });
  EXPECT_NE(e.find("a null 'value' needs a 'note'"), std::string::npos) << e;
  d = device();
  d["class"] = "mainframe";
  EXPECT_NE(error_of([&] {
              cat::parse_devices(devices_doc(d), "d.json");
            }).find("'class' = 'mainframe' is not one of"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              cat::parse_devices(devices_doc(device(), "Dev A"), "d.json");
            }).find("must be lower-case"),
            std::string::npos);
}

TEST(Catalogue, TruncatedOrHostileFilesAreRefusedOnOneLine) {
  const std::string full = slurp(kDir + "/measurements.json");
  ASSERT_GT(full.size(), 1000u);
  std::string e =
      error_of([&] { cat::parse_measurements(full.substr(0, full.size() / 2), "measurements.json"); });
  EXPECT_EQ(e.rfind("measurements.json: not valid JSON", 0), 0u) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;

  e = error_of([&] { cat::parse_measurements(std::string(100000, '['), "deep.json"); });
  EXPECT_NE(e.find("deep.json: nested deeper than"), std::string::npos) << e;
  e = error_of([&] { cat::parse_measurements("[1, 2, 3]", "list.json"); });
  EXPECT_NE(e.find("list.json: top level: expected an object"), std::string::npos) << e;
  e = error_of([&] { cat::parse_devices("", "empty.json"); });
  EXPECT_NE(e.find("empty.json: not valid JSON"), std::string::npos) << e;
  e = error_of([&] { cat::parse_devices(std::string("{\"schema\": \"x\0y\"}", 18), "nul.json"); });
  EXPECT_NE(e.find("nul.json"), std::string::npos) << e;
  json doc = json::parse(devices_doc(device()));
  doc["schema"] = "edgeprobe.predict.devices/2";
  e = error_of([&] { cat::parse_devices(doc.dump(), "d.json"); });
  EXPECT_NE(e.find("'schema' must be 'edgeprobe.predict.devices/1'"), std::string::npos) << e;
}

TEST(Catalogue, DuplicateIdsAndUnknownDevicesAreRefused) {
  json doc = json::parse(measurements_doc(measurement()));
  doc["measurements"].push_back(measurement());
  EXPECT_NE(
      error_of([&] { cat::parse_measurements(doc.dump(), "m.json"); }).find("m.json: m001: duplicate id"),
      std::string::npos);

  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "edgeprobe-catalogue-test";
  std::filesystem::create_directories(dir);
  json m = measurement();
  m["device"] = "dev-b";
  std::ofstream(dir / "d.json") << devices_doc(device());
  std::ofstream(dir / "m.json") << measurements_doc(m);
  const std::string e = error_of([&] { cat::load(dir / "d.json", dir / "m.json"); });
  EXPECT_NE(e.find("m001: device 'dev-b' is not in"), std::string::npos) << e;
  EXPECT_NE(
      error_of([&] { cat::load(dir / "absent.json", dir / "m.json"); }).find("absent.json: cannot read"),
      std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Catalogue, DevicesAreFoundByKeyOrAliasAndUnknownNamesGetSuggestions) {
  const cat::Catalogue c = cat::load(kDir + "/devices.json", kDir + "/measurements.json");
  EXPECT_EQ(cat::find_device(c, "raspberry-pi-5").key, "raspberry-pi-5");
  EXPECT_EQ(cat::find_device(c, "RPI5").key, "raspberry-pi-5");
  EXPECT_EQ(cat::find_device(c, "rtx 4090").key, "nvidia-rtx-4090");
  const std::string e = error_of([&] { cat::find_device(c, "raspbery-pi-5"); });
  EXPECT_NE(e.find("unknown device 'raspbery-pi-5'; nearest: raspberry-pi-5"), std::string::npos) << e;
}

}  // namespace
