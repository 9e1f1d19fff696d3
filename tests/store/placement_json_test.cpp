// A test's placement (engine/placement.h) through the result JSON the store keeps, and a
// test config from before GPU offload read back as what it ran.
#include <gtest/gtest.h>

#include "result/result.h"

using nlohmann::json;

namespace edgeprobe::result {
namespace {

TEST(Placement, RoundTripsThroughJsonAndAnOldConfigRanOnTheCpu) {
  engine::Placement p;
  p.devices = {"Vulkan0 (llvmpipe) - 2048 MiB free"};
  p.layers_offloaded = 3;
  p.layers_total = 5;
  p.buffers_mib = {{"Vulkan0 model", 2.5}, {"CPU_Mapped model", 0.5}};
  p.weights_moved = {"tensor 'blk.0.ffn_up.weight' (tq1_0) (and 6 others) cannot be used ..."};
  p.graph_splits_prefill = 26;
  p.graph_splits_decode = 24;
  p.decode = engine::GraphPlacement{1, {{"Vulkan0", 45, 900}, {"CPU", 37, 1200}}, {{"MUL_MAT", "ffn_up", 4, 160}}};
  const engine::Placement back = placement_from_json(to_json(p));
  EXPECT_EQ(to_json(back), to_json(p));
  EXPECT_FALSE(back.prefill);
  ASSERT_TRUE(back.decode);
  EXPECT_EQ(back.decode->cpu_nodes[0].tensor, "ffn_up");
  EXPECT_NEAR(engine::Placement::node_share(back.decode, "CPU"), 37.0 / 82, 1e-12);
  EXPECT_TRUE(placement_from_json(nullptr).empty());

  // A test config from before GPU offload: every layer on the CPU, not today's default.
  json config = to_json(workload::TestCase{});
  for (const char* key : {"n_gpu_layers", "devices", "split_mode", "main_gpu", "op_offload"}) config.erase(key);
  const auto old = test_case_from_json(config, "m.gguf");
  EXPECT_EQ(old.n_gpu_layers, 0);
  EXPECT_TRUE(old.op_offload);
}

}  // namespace
}  // namespace edgeprobe::result
