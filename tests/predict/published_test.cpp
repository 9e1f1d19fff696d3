// `predict` for a device not at hand (src/predict/published.h): efficiencies fitted on the
// catalogue's fit entries only, thread scaling over big and little clusters, intervals that
// are never zero wide, and what it says without a bandwidth figure. The probed path
// (predict::predict) is tested in predict_test.cpp and does not use any of this.
#include "predict/published.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/synth.h"
#include "predict/catalogue.h"
#include "predict/predict.h"

namespace {

namespace cat = edgeprobe::predict::catalogue;
namespace pub = edgeprobe::predict::published;

const std::string kDir = EDGEPROBE_PREDICT_DATA_DIR;

const cat::Catalogue& shipped() {
  static const cat::Catalogue c = cat::load(kDir + "/devices.json", kDir + "/measurements.json");
  return c;
}

// A phone-like CPU: 2 big cores at 3.0 GHz and 4 little ones at 2.0 GHz.
pub::Figures big_little(double bandwidth_gbs) {
  pub::Figures f;
  f.device_class = "arm-phone";
  f.bandwidth_gbs = bandwidth_gbs;
  f.clusters = {{"little", 4, 2.0}, {"big", 2, 3.0}};  // listed little first: order must not matter
  return f;
}

pub::Query query(const std::string& phase, const pub::Figures& f, int threads) {
  pub::Query q;
  q.phase = phase;
  q.backend = "cpu";
  q.figures = f;
  q.threads = threads;
  q.params = 3.21e9;
  q.weight_bytes = 3.21e9 * *pub::bits_per_weight("q4_k_m") / 8;
  return q;
}

}  // namespace

TEST(Published, FitsOnFitEntriesOnly) {
  const auto base = pub::fit(shipped());
  cat::Catalogue changed = shipped();
  for (auto& m : changed.measurements)
    if (m.split == "validation") m.tokens_per_s *= 10;
  const auto other = pub::fit(changed);
  ASSERT_EQ(base.pools.size(), other.pools.size());
  for (size_t i = 0; i < base.pools.size(); ++i) {
    EXPECT_EQ(base.pools[i].key, other.pools[i].key);
    EXPECT_EQ(base.pools[i].values, other.pools[i].values) << base.pools[i].key;
    for (const auto& id : base.pools[i].ids) {
      const auto it = std::find_if(shipped().measurements.begin(), shipped().measurements.end(),
                                   [&](const auto& m) { return m.id == id; });
      ASSERT_NE(it, shipped().measurements.end());
      EXPECT_EQ(it->split, "fit") << id << " in " << base.pools[i].key;
    }
  }
  ASSERT_EQ(base.residuals.size(), other.residuals.size());
  for (size_t i = 0; i < base.residuals.size(); ++i)
    EXPECT_EQ(base.residuals[i].values, other.residuals[i].values);
  EXPECT_GT(base.fit_entries, 50u);
}

TEST(Published, ThreadScalingFollowsTheClustersBigCoresFirst) {
  const auto cal = pub::fit(shipped());
  // Bandwidth far above what 6 cores pull: decode is the cores' limit at every thread count.
  const auto wide = big_little(10000);
  std::vector<double> decode, prefill;
  for (int t = 1; t <= 6; ++t) {
    const auto d = pub::predict(cal, query("decode", wide, t));
    const auto p = pub::predict(cal, query("prefill", wide, t));
    ASSERT_GT(d.value, 0) << t;
    ASSERT_GT(p.value, 0) << t;
    EXPECT_EQ(d.bound, "cores") << t;
    decode.push_back(d.value);
    prefill.push_back(p.value);
  }
  for (const auto* v : {&decode, &prefill}) {
    // Threads 1 and 2 land on the 3.0 GHz cores, 3 to 6 on the 2.0 GHz ones.
    EXPECT_NEAR((*v)[1] / (*v)[0], 2.0, 1e-9);
    EXPECT_NEAR(((*v)[2] - (*v)[1]) / ((*v)[1] - (*v)[0]), 2.0 / 3.0, 1e-9);
    EXPECT_NEAR((*v)[5] / (*v)[0], (2 * 3.0 + 4 * 2.0) / 3.0, 1e-9);
  }
  // Threads past the cores add nothing.
  EXPECT_DOUBLE_EQ(pub::predict(cal, query("decode", wide, 12)).value, decode[5]);
  // A narrow bus: more threads stop helping once the bandwidth binds.
  const auto narrow = big_little(8);
  const auto one = pub::predict(cal, query("decode", narrow, 1));
  const auto six = pub::predict(cal, query("decode", narrow, 6));
  EXPECT_EQ(six.bound, "bandwidth");
  EXPECT_LE(six.value, decode[5]);
  EXPECT_LE(one.value, six.value);
  EXPECT_DOUBLE_EQ(six.value, pub::predict(cal, query("decode", narrow, 5)).value);
}

TEST(Published, IntervalsAreNeverZeroWideAndHoldTheirValue) {
  const auto cal = pub::fit(shipped());
  int predicted = 0;
  for (const auto& m : shipped().measurements) {
    const auto q = pub::query_of(shipped(), m);
    if (!q) continue;
    const auto a = pub::predict(cal, *q);
    if (a.value <= 0) continue;
    ++predicted;
    EXPECT_LT(a.low, a.high) << m.id;
    EXPECT_LE(a.low, a.value) << m.id;
    EXPECT_GE(a.high, a.value) << m.id;
    EXPECT_NE(a.basis.find("fit entries"), std::string::npos) << m.id << ": " << a.basis;
  }
  EXPECT_GT(predicted, 50);
  // A class with no evidence of its own says it is thin and takes a wider pool's interval.
  auto f = big_little(60);
  const auto a = pub::predict(cal, query("decode", f, 6));
  ASSERT_GT(a.value, 0);
  EXPECT_TRUE(a.thin);
  EXPECT_LT(a.low, a.high);
  bool said = false;
  for (const auto& n : a.notes) said |= n.find("thin evidence") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Published, ASpecWithoutBandwidthHasNoDecodeAndSaysWhy) {
  const auto cal = pub::fit(shipped());
  const auto& phone = cat::find_device(shipped(), "snapdragon-8-elite-gen-5");
  const auto f = pub::figures_of(phone);
  ASSERT_EQ(f.bandwidth_gbs, 0);
  const auto d = pub::predict(cal, query("decode", f, 0));
  EXPECT_EQ(d.value, 0);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes.front().find("--bandwidth"), std::string::npos);
  // Prefill needs no bandwidth: its clusters give it.
  EXPECT_GT(pub::predict(cal, query("prefill", f, 0)).value, 0);
  // A derived figure is used, and the basis says so.
  const auto pi = pub::figures_of(cat::find_device(shipped(), "raspberry-pi-5"));
  EXPECT_GT(pi.bandwidth_gbs, 0);
  EXPECT_EQ(pi.bandwidth_basis.rfind("derived", 0), 0u) << pi.bandwidth_basis;
}

TEST(Published, UnknownDeviceNamesGetTheNearest) {
  try {
    (void)cat::find_device(shipped(), "jetson-orin-agx");
    FAIL() << "no throw";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("jetson"), std::string::npos) << e.what();
  }
}

TEST(Published, BitsPerWeightMatchTheQuantizersPlan) {
  const auto shape = edgeprobe::model::named_shape("llama-7b");
  for (const char* q : {"f16", "q8_0", "q6_k", "q5_k_m", "q5_k_s", "q5_0", "q4_k_m", "q4_k_s", "q4_0",
                        "q3_k_l", "q3_k_m", "q3_k_s", "q2_k"}) {
    const auto info = edgeprobe::model::planned_layout(shape, q);
    const double planned =
        static_cast<double>(info.weight_bytes()) * 8 / static_cast<double>(info.n_params());
    ASSERT_TRUE(pub::bits_per_weight(q)) << q;
    EXPECT_NEAR(*pub::bits_per_weight(q), planned, 0.01 * planned) << q;
  }
}

TEST(Published, APredictionFromTheCatalogueHasIntervalsAndNotes) {
  namespace predict = edgeprobe::predict;
  const auto cal = pub::fit(shipped());
  const auto info = edgeprobe::model::planned_layout(edgeprobe::model::named_shape("llama-3.2-3b"), "q4_k_m");
  predict::Config c;
  c.threads = 4;
  const auto pi = pub::figures_of(cat::find_device(shipped(), "raspberry-pi-5"));
  const auto p = predict::predict_from_catalogue(info, cal, pi, "cpu", c);
  ASSERT_GT(p.decode_tokens_per_s.value, 0);
  ASSERT_GT(p.prefill_tokens_per_s.value, 0);
  EXPECT_LT(p.decode_tokens_per_s.low, p.decode_tokens_per_s.high);
  EXPECT_LT(p.prefill_tokens_per_s.low, p.prefill_tokens_per_s.high);
  EXPECT_FALSE(p.decode_spread.basis.empty());
  EXPECT_GT(p.generation_ms.value, 0);
  // Fewer threads: never faster.
  c.threads = 1;
  const auto one = predict::predict_from_catalogue(info, cal, pi, "cpu", c);
  EXPECT_LE(one.decode_tokens_per_s.value, p.decode_tokens_per_s.value);
  EXPECT_LT(one.prefill_tokens_per_s.value, p.prefill_tokens_per_s.value);
}
