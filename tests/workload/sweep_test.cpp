#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "core/error.h"
#include "support/run_process.h"
#include "workload/sweep.h"
#include "workload/sweep_size.h"

using namespace edgeprobe;
using workload::parse_int_list;

TEST(ParseIntList, CommaListsAndRanges) {
  EXPECT_EQ(parse_int_list("1,2", "-t"), (std::vector<int>{1, 2}));
  EXPECT_EQ(parse_int_list("64-512*2", "-p"), (std::vector<int>{64, 128, 256, 512}));
  EXPECT_EQ(parse_int_list("1-8+3", "-t"), (std::vector<int>{1, 4, 7}));
  EXPECT_EQ(parse_int_list("4-6", "-t"), (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(parse_int_list("0,16-32*2", "-p"), (std::vector<int>{0, 16, 32}));
}

TEST(ParseIntList, RejectsGarbageWithTheFlagNamed) {
  for (const char* bad : {"abc", "1,,2", "8-1", "1-8+0", "0-8*2", "1-8*1", "", "3x", "1-2-3"}) {
    try {
      parse_int_list(bad, "-p");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << bad;
      EXPECT_NE(std::string(e.what()).find("-p"), std::string::npos) << e.what();
    }
  }
}

TEST(ParseIntList, RefusesRangesThatWouldNotFitInMemory) {
  EXPECT_THROW(parse_int_list("1-100000000", "-p"), Error);
}

TEST(ParseFlashAttn, AcceptsLlamaBenchSpellings) {
  EXPECT_EQ(workload::parse_flash_attn("on"), 1);
  EXPECT_EQ(workload::parse_flash_attn("0"), 0);
  EXPECT_EQ(workload::parse_flash_attn("auto"), -1);
  EXPECT_THROW(workload::parse_flash_attn("maybe"), Error);
}

TEST(ExpandSweep, GroupsByModelSoEachLoadsOnce) {
  workload::SweepSpec spec;
  spec.models = {"a.gguf", "b.gguf"};
  spec.n_prompt = {16, 32};
  spec.n_gen = {8};
  spec.threads = {1, 2};
  const auto cases = workload::expand(spec, 4);
  ASSERT_EQ(cases.size(), 2u * 2u * 3u);
  int switches = 0;
  for (size_t i = 1; i < cases.size(); ++i) switches += cases[i].model_path != cases[i - 1].model_path;
  EXPECT_EQ(switches, 1);
  EXPECT_EQ(cases[0].name(), "pp16");
  EXPECT_EQ(cases[2].name(), "tg8");
  EXPECT_EQ(cases[0].n_threads, 1);
  EXPECT_EQ(cases[3].n_threads, 2);
}

TEST(ExpandSweep, ZeroSkipsATestKindAndPairsAddPgTests) {
  workload::SweepSpec spec;
  spec.models = {"m.gguf"};
  spec.n_prompt = {0};
  spec.n_gen = {0};
  spec.prompt_gen = {{64, 16}};
  spec.n_depth = {0, 128};
  const auto cases = workload::expand(spec, 2);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].name(), "pp64+tg16");
  EXPECT_EQ(cases[1].name(), "pp64+tg16 @ d128");
  EXPECT_EQ(cases[0].n_threads, 2);  // the default thread count
}

TEST(ExpandSweep, VariedParametersAreNamed) {
  workload::SweepSpec spec;
  spec.models = {"m.gguf"};
  spec.n_batch = {128, 256};
  spec.flash_attn = {0, 1};
  const auto varied = workload::varied_parameters(workload::expand(spec, 1));
  EXPECT_EQ(varied, (std::vector<std::string>{"n_batch", "flash_attn"}));
}

// The cross product is counted before it is built: each list within its own cap can still
// multiply to 10^8 tests, or past 2^64, which must not wrap to a small count.
TEST(ExpandSweep, CountsTheCrossProductWithoutOverflowAndRefusesPastTheBound) {
  workload::SweepSpec s;
  s.models = {"m"};
  s.n_prompt = {8, 0, 16};  // 0: no prompt test
  s.n_gen = {4};
  s.prompt_gen = {{8, 2}, {0, 0}};
  s.threads = {1, 2};
  EXPECT_EQ(workload::test_count(s), 2u * (2 + 1 + 1));
  EXPECT_EQ(workload::test_count(s), workload::expand(s, 1).size());

  s.n_batch = parse_int_list("1-10000", "-b");
  s.n_ubatch = parse_int_list("1-10000", "-ub");
  EXPECT_EQ(workload::test_count(s), uint64_t{2} * 4 * 10000 * 10000);
  const std::string refusal = test_support::error_message([&] { workload::expand(s, 1); });
  EXPECT_NE(refusal.find("800000000 tests, over the 10000"), std::string::npos) << refusal;

  s.n_depth = parse_int_list("0-9999", "-d");
  s.poll = parse_int_list("0-100", "--poll");
  s.threads = parse_int_list("1-512", "-t");
  s.flash_attn = {-1, 0, 1};
  EXPECT_EQ(workload::test_count(s), uint64_t{2} * 4 * 10000 * 10000 * 10000 * 101 * 3 * 256);  // 6.2e17: still exact
  s.n_prompt = parse_int_list("1-10000", "-p");
  EXPECT_EQ(workload::test_count(s), std::numeric_limits<uint64_t>::max());  // saturated, not wrapped
  EXPECT_NE(test_support::error_message([&] { workload::expand(s, 1); }).find("over 18446744073709551615 tests"),
            std::string::npos);
  EXPECT_EQ(workload::saturating_product({3, 0, std::numeric_limits<uint64_t>::max()}), 0u);
}

TEST(ExpandSweep, GpuSettingsAreLoadSettingsSoEachOffloadLoadsOnce) {
  workload::SweepSpec spec;
  spec.models = {"m.gguf"};
  spec.n_prompt = {16};
  spec.n_gen = {4};
  spec.threads = {1, 2};
  spec.n_gpu_layers = {0, 99};
  spec.op_offload = {1, 0};
  const auto cases = workload::expand(spec, 2);
  ASSERT_EQ(cases.size(), 2u * 2u * 2u * 2u);
  // Tests that share a load are together: the model loads once per -ngl value.
  int loads = 1;
  for (size_t i = 1; i < cases.size(); ++i) loads += !cases[i].same_model(cases[i - 1]);
  EXPECT_EQ(loads, 2);
  EXPECT_EQ(cases.front().n_gpu_layers, 0);
  EXPECT_EQ(cases.back().n_gpu_layers, 99);
  EXPECT_TRUE(cases.front().op_offload);
  EXPECT_FALSE(cases.back().op_offload);
  const auto varied = workload::varied_parameters(cases);
  EXPECT_NE(std::find(varied.begin(), varied.end(), "n_gpu_layers"), varied.end());
  EXPECT_NE(std::find(varied.begin(), varied.end(), "op_offload"), varied.end());
  EXPECT_EQ(std::find(varied.begin(), varied.end(), "devices"), varied.end());
}
