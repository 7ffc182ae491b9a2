#include "parallel/rank_hosts.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(RankHosts, OneLinePerRankWithItsStageAndTpRank) {
  WorldConfig layout = *WorldConfig::create(0, 4, 2, 2);
  absl::StatusOr<std::string> text = describe_rank_hosts(layout, {"a", "b", "c", "a"});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "weft: rank 0 (stage 0, tp rank 0) on host a\n"
            "weft: rank 1 (stage 0, tp rank 1) on host b\n"
            "weft: rank 2 (stage 1, tp rank 0) on host c\n"
            "weft: rank 3 (stage 1, tp rank 1) on host a\n");
}

TEST(RankHosts, PipelineOnlyLayout) {
  WorldConfig layout = *WorldConfig::create(1, 2, 1, 2);
  absl::StatusOr<std::string> text = describe_rank_hosts(layout, {"x", "y"});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "weft: rank 0 (stage 0, tp rank 0) on host x\nweft: rank 1 (stage 1, tp rank 0) on host y\n");
}

TEST(RankHosts, WrongNumberOfHostsIsAnError) {
  WorldConfig layout = *WorldConfig::create(0, 4, 2, 2);
  absl::StatusOr<std::string> text = describe_rank_hosts(layout, {"a", "b"});
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("2 host names for a world of 4"), std::string::npos);
}

}  // namespace
}  // namespace weft
