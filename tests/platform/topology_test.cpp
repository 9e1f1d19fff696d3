// Topology from sysfs fixture trees (tests/fixtures/sysfs/<device>/README.md says where
// each layout comes from) and from the live machine through hwloc.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "platform/topology.h"
#include "support/sysfs_fixtures.h"

namespace edgeprobe::platform {
namespace {

TEST(Topology, PhoneWithOnePrimeThreeBigFourLittleIsRankedBigToLittle) {
  const Topology t = detect_topology(test_support::sysfs_fixture_root("phone-1-3-4"));
  EXPECT_EQ(t.source, "sysfs");
  EXPECT_EQ(t.n_logical, 8);
  EXPECT_EQ(t.n_cores, 8);
  EXPECT_EQ(t.n_packages, 1);
  ASSERT_EQ(t.clusters.size(), 3u);
  EXPECT_EQ(t.clusters[0].label, "prime");
  EXPECT_EQ(t.clusters[0].cpus, (std::vector<int>{7}));
  EXPECT_EQ(t.clusters[0].capacity, 1024);
  EXPECT_EQ(t.clusters[0].max_freq_khz, 2995200);
  EXPECT_EQ(t.clusters[1].label, "big");
  EXPECT_EQ(t.clusters[1].cpus, (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(t.clusters[2].label, "little");
  EXPECT_EQ(t.clusters[2].cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.clusters[2].n_cores, 4);
  EXPECT_EQ(t.llc_total_bytes(), 6u << 20);
  // A probe adds threads on the fastest cores first.
  EXPECT_EQ(t.placement_order(), (std::vector<int>{7, 4, 5, 6, 0, 1, 2, 3}));
}

TEST(Topology, IntelHybridLaptopSplitsPCoresFromECoresAndCountsHyperThreadsOnce) {
  const Topology t = detect_topology(test_support::sysfs_fixture_root("intel-hybrid-laptop"));
  EXPECT_EQ(t.n_logical, 16);
  EXPECT_EQ(t.n_cores, 12);
  ASSERT_EQ(t.clusters.size(), 2u);
  EXPECT_EQ(t.clusters[0].label, "P-core");
  EXPECT_EQ(t.clusters[0].cpus, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(t.clusters[0].n_cores, 4);
  EXPECT_EQ(t.clusters[0].max_freq_khz, 4700000);
  EXPECT_EQ(t.clusters[1].label, "E-core");
  EXPECT_EQ(t.clusters[1].n_cores, 8);
  EXPECT_EQ(t.cpus[1].smt_siblings, (std::vector<int>{0, 1}));
  EXPECT_EQ(t.llc_total_bytes(), 18u << 20);  // one shared L3
  // One thread per P-core, then the E-cores, then the P-cores' second hyper-threads.
  EXPECT_EQ(t.placement_order(), (std::vector<int>{0, 2, 4, 6, 8, 9, 10, 11, 12, 13, 14, 15, 1, 3, 5, 7}));
  // The two E-core modules each share one L2: two distinct 2 MiB L2 instances.
  int e_l2 = 0;
  for (const auto& c : t.caches) e_l2 += c.level == 2 && c.size_bytes == (2u << 20);
  EXPECT_EQ(e_l2, 2);
}

TEST(Topology, TwoSocketServerHasOneClusterAndOneNumaNodePerPackage) {
  const Topology t = detect_topology(test_support::sysfs_fixture_root("server-2socket"));
  EXPECT_EQ(t.n_packages, 2);
  EXPECT_EQ(t.n_cores, 8);
  EXPECT_EQ(t.n_logical, 16);
  ASSERT_EQ(t.clusters.size(), 2u);
  EXPECT_EQ(t.clusters[0].label, "uniform");
  EXPECT_EQ(t.clusters[0].rank, t.clusters[1].rank);
  EXPECT_EQ(t.clusters[0].package_id, 0);
  EXPECT_EQ(t.clusters[0].cpus, (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(t.clusters[1].package_id, 1);
  EXPECT_EQ(t.clusters[1].n_cores, 4);
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.numa_nodes[1].cpus, (std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15}));
  EXPECT_EQ(t.numa_nodes[1].memory_bytes, 98304000ull * 1024);
  EXPECT_EQ(t.cpus[13].numa_node, 1);
  EXPECT_EQ(t.cpus[13].package_id, 1);
  EXPECT_EQ(t.llc_total_bytes(), 2u * 8448u * 1024u);  // one 8.25 MiB L3 per socket
}

TEST(Topology, MissingTreeGivesNoCpusAndSaysWhy) {
  const Topology t = detect_topology(FsRoot("/nonexistent-edgeprobe-root"));
  EXPECT_TRUE(t.cpus.empty());
  ASSERT_FALSE(t.notes.empty());
  EXPECT_NE(t.notes[0].find("no CPUs"), std::string::npos);
}

TEST(Topology, LiveMachineThroughHwlocCountsTheOnlineCpus) {
  const Topology t = detect_topology(FsRoot("/"));
  EXPECT_EQ(t.source.rfind("hwloc", 0), 0u) << t.source;
  EXPECT_EQ(t.n_logical, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_GE(t.n_cores, 1);
  EXPECT_FALSE(t.clusters.empty());
  const auto j = to_json(t);
  EXPECT_EQ(j["n_logical"], t.n_logical);
}

TEST(Topology, CpuListsAndCacheSizesParseAsTheKernelWritesThem) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_EQ(parse_size("32K"), 32u * 1024);
  EXPECT_EQ(parse_size("8448K"), 8448u * 1024);
  EXPECT_EQ(parse_size("16M"), 16u << 20);
  EXPECT_EQ(parse_size("junk"), 0u);
}

}  // namespace
}  // namespace edgeprobe::platform
