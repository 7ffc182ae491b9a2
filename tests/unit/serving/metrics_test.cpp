// /metrics' prefix-cache and KV-tier series: present with the values of the engine's gauges, and
// the tier series absent when the engine has no tiers.
#include "serving/metrics.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(ServingMetricsTest, PrefixCacheAndKvTierSeries) {
  ServingMetrics metrics;
  EngineGauges g;
  g.prefix_query_tokens = 40;
  g.prefix_hit_tokens = 24;
  std::string text = metrics.render(g);
  EXPECT_TRUE(has_line(text, "vllm:prefix_cache_queries_total 40")) << text;
  EXPECT_TRUE(has_line(text, "weft:prefix_cache_hits_total 24")) << text;
  EXPECT_EQ(text.find("kv_offload"), std::string::npos);

  g.kv_tiers = true;
  g.kv_tier_block_bytes = 100;
  g.kv_tier.host_blocks = 3;
  g.kv_tier.host_capacity_blocks = 8;
  g.kv_tier.host_query_blocks = 4;
  g.kv_tier.host_hit_blocks = 1;
  g.kv_tier.disk_query_blocks = 3;
  g.kv_tier.disk_hit_blocks = 3;
  KvDiskTierStats disk;
  disk.bytes = 1234;
  disk.max_bytes = 5000;
  disk.misses_corrupt = 2;
  g.kv_disk = disk;
  text = metrics.render(g);
  EXPECT_TRUE(has_line(text, "weft:kv_offload_bytes 300")) << text;
  EXPECT_TRUE(has_line(text, "weft:kv_offload_capacity_bytes 800")) << text;
  EXPECT_TRUE(has_line(text, "weft:kv_offload_hits_total 1")) << text;
  EXPECT_TRUE(has_line(text, "weft:kv_offload_hit_rate 0.25")) << text;
  EXPECT_TRUE(has_line(text, "weft:kv_disk_bytes 1234")) << text;
  EXPECT_TRUE(has_line(text, "weft:kv_disk_hit_rate 1")) << text;
  EXPECT_TRUE(has_line(text, "weft:kv_disk_misses_total{reason=\"corrupt\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "# TYPE weft:kv_disk_queries counter")) << text;
}

}  // namespace
}  // namespace weft
