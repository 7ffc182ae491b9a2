// Every collective of MpiCommunicator and the MpiWorld control channel, run under
// mpirun -np 2 and -np 4 (and as a singleton, where multi-rank tests skip). Expected values are
// computed naively on each rank from the rank numbers alone.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/step_plan_codec.h"
#include "parallel/mpi_communicator.h"
#include "parallel/mpi_world.h"
#include "tests/mpi/mpi_test_env.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<MpiCommunicator> world_comm(size_t max_message_bytes = kDefaultMaxMpiMessageBytes) {
  absl::StatusOr<std::unique_ptr<MpiCommunicator>> c =
      MpiCommunicator::duplicate(MPI_COMM_WORLD, max_message_bytes);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

#define REQUIRE_RANKS(n)                                                     \
  if (g_world->size() < (n)) GTEST_SKIP() << "needs at least " << (n) << " ranks"

TEST(MpiWorld, RankAndSize) {
  EXPECT_GE(g_world->size(), 1);
  EXPECT_GE(g_world->rank(), 0);
  EXPECT_LT(g_world->rank(), g_world->size());
  EXPECT_GE(g_world->thread_level(), MPI_THREAD_FUNNELED);
  std::unique_ptr<MpiCommunicator> c = world_comm();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->rank(), g_world->rank());
  EXPECT_EQ(c->size(), g_world->size());
  EXPECT_TRUE(c->barrier().ok());
}

void check_sum_f32(size_t max_message_bytes, int64_t n) {
  std::unique_ptr<MpiCommunicator> c = world_comm(max_message_bytes);
  ASSERT_NE(c, nullptr);
  const int size = c->size();
  Tensor t = Tensor::empty(DType::kF32, Shape{n});
  for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = float((c->rank() + 1) * (i % 7 + 1));
  ASSERT_TRUE(c->all_reduce_sum(t).ok());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(t.data_as<float>()[i], float((i % 7 + 1) * size * (size + 1) / 2)) << i;
  }
}

TEST(MpiCommunicator, AllReduceSumF32) { check_sum_f32(kDefaultMaxMpiMessageBytes, 1000); }
TEST(MpiCommunicator, AllReduceSumF32InPieces) { check_sum_f32(1000, 1003); }

TEST(MpiCommunicator, AllReduceSumIntegers) {
  std::unique_ptr<MpiCommunicator> c = world_comm(64);
  ASSERT_NE(c, nullptr);
  const int64_t size = c->size();
  Tensor a = Tensor::empty(DType::kI32, Shape{3, 11});
  Tensor b = Tensor::empty(DType::kI64, Shape{33});
  for (int i = 0; i < 33; ++i) {
    a.data_as<int32_t>()[i] = c->rank() * 1000 + i;
    b.data_as<int64_t>()[i] = (int64_t{c->rank()} << 33) + i;
  }
  ASSERT_TRUE(c->all_reduce_sum(a).ok());
  ASSERT_TRUE(c->all_reduce_sum(b).ok());
  for (int i = 0; i < 33; ++i) {
    EXPECT_EQ(a.data_as<int32_t>()[i], 1000 * size * (size - 1) / 2 + size * i);
    EXPECT_EQ(b.data_as<int64_t>()[i], ((size * (size - 1) / 2) << 33) + size * i);
  }
}

TEST(MpiCommunicator, AllReduceMax) {
  std::unique_ptr<MpiCommunicator> c = world_comm(40);
  ASSERT_NE(c, nullptr);
  const int n = 97;
  auto value = [](int rank, int i) { return float((i * 5 + rank * 3) % 11) - 5.5f; };
  Tensor t = Tensor::empty(DType::kF32, Shape{n});
  for (int i = 0; i < n; ++i) t.data_as<float>()[i] = value(c->rank(), i);
  ASSERT_TRUE(c->all_reduce_max(t).ok());
  for (int i = 0; i < n; ++i) {
    float expected = value(0, i);
    for (int r = 1; r < c->size(); ++r) expected = std::max(expected, value(r, i));
    EXPECT_EQ(t.data_as<float>()[i], expected) << i;
  }
}

TEST(MpiCommunicator, ReductionRejectsHalfAndDeviceTensors) {
  std::unique_ptr<MpiCommunicator> c = world_comm();
  ASSERT_NE(c, nullptr);
  Tensor h = Tensor::zeros(DType::kF16, Shape{4});
  absl::Status s = c->all_reduce_sum(h);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("dtype f16"));
  Tensor f = Tensor::zeros(DType::kF32, Shape{4});
  TensorView dev = f.view();
  dev.device = Device::kCuda;
  EXPECT_EQ(c->all_reduce_max(dev).code(), absl::StatusCode::kInvalidArgument);
}

void check_all_gather(size_t max_message_bytes, bool in_place) {
  std::unique_ptr<MpiCommunicator> c = world_comm(max_message_bytes);
  ASSERT_NE(c, nullptr);
  const int n = 37;  // odd bytes per rank, so pieces do not align with anything
  Tensor out = Tensor::zeros(DType::kU8, Shape{c->size(), n});
  Tensor mine = Tensor::empty(DType::kU8, Shape{n});
  TensorView in = in_place ? out.view().rows(c->rank(), 1).reshaped(Shape{n}) : mine.view();
  for (int i = 0; i < n; ++i) in.as<uint8_t>()[i] = uint8_t(c->rank() * 50 + i);
  ASSERT_TRUE(c->all_gather(in, out).ok());
  for (int r = 0; r < c->size(); ++r) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(out.data_as<uint8_t>()[r * n + i], uint8_t(r * 50 + i)) << r << "," << i;
    }
  }
}

TEST(MpiCommunicator, AllGather) { check_all_gather(kDefaultMaxMpiMessageBytes, false); }
TEST(MpiCommunicator, AllGatherInPlace) { check_all_gather(kDefaultMaxMpiMessageBytes, true); }
TEST(MpiCommunicator, AllGatherInPieces) { check_all_gather(8, false); }
TEST(MpiCommunicator, AllGatherInPiecesInPlace) { check_all_gather(8, true); }

TEST(MpiCommunicator, AllGatherRejectsWrongOutputSize) {
  std::unique_ptr<MpiCommunicator> c = world_comm();
  ASSERT_NE(c, nullptr);
  Tensor in = Tensor::zeros(DType::kF32, Shape{4});
  Tensor out = Tensor::zeros(DType::kF32, Shape{4 * c->size() + 1});
  absl::Status s = c->all_gather(in, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("expected"));
}

TEST(MpiCommunicator, BroadcastFromEveryRoot) {
  for (size_t max_bytes : {kDefaultMaxMpiMessageBytes, size_t{24}}) {
    std::unique_ptr<MpiCommunicator> c = world_comm(max_bytes);
    ASSERT_NE(c, nullptr);
    for (int root = 0; root < c->size(); ++root) {
      Tensor t = Tensor::zeros(DType::kI64, Shape{10, 10});
      if (c->rank() == root) {
        for (int i = 0; i < 100; ++i) t.data_as<int64_t>()[i] = root * 1000000007LL + i;
      }
      ASSERT_TRUE(c->broadcast(t, root).ok());
      for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(t.data_as<int64_t>()[i], root * 1000000007LL + i) << root << "," << i;
      }
      Tensor bf = Tensor::zeros(DType::kBF16, Shape{7});
      if (c->rank() == root) std::memset(bf.data(), 0x3f, bf.nbytes());
      ASSERT_TRUE(c->broadcast(bf, root).ok());
      for (int i = 0; i < 14; ++i) ASSERT_EQ(static_cast<uint8_t*>(bf.data())[i], 0x3f);
    }
  }
}

// Pairs (0,1), (2,3), ...: the even rank sends first, then receives the odd rank's reply.
TEST(MpiCommunicator, SendRecvPairs) {
  REQUIRE_RANKS(2);
  for (size_t max_bytes : {kDefaultMaxMpiMessageBytes, size_t{64}}) {
    std::unique_ptr<MpiCommunicator> c = world_comm(max_bytes);
    ASSERT_NE(c, nullptr);
    const int r = c->rank();
    const int peer = r ^ 1;
    if (peer >= c->size()) continue;
    const int n = 513;
    Tensor out = Tensor::empty(DType::kF32, Shape{n});
    Tensor in = Tensor::zeros(DType::kF32, Shape{n});
    for (int i = 0; i < n; ++i) out.data_as<float>()[i] = float(r * 10000 + i);
    if (r % 2 == 0) {
      ASSERT_TRUE(c->send(out, peer).ok());
      ASSERT_TRUE(c->recv(in, peer).ok());
    } else {
      ASSERT_TRUE(c->recv(in, peer).ok());
      ASSERT_TRUE(c->send(out, peer).ok());
    }
    for (int i = 0; i < n; ++i) ASSERT_EQ(in.data_as<float>()[i], float(peer * 10000 + i));
  }
}

TEST(MpiCommunicator, RecvOfTheWrongSizeIsAnError) {
  REQUIRE_RANKS(2);
  std::unique_ptr<MpiCommunicator> c = world_comm();
  ASSERT_NE(c, nullptr);
  Tensor ten = Tensor::zeros(DType::kF32, Shape{10});
  Tensor twelve = Tensor::zeros(DType::kF32, Shape{12});
  if (c->rank() == 0) {
    EXPECT_TRUE(c->send(ten, 1).ok());
    EXPECT_TRUE(c->send(twelve, 1).ok());
  } else if (c->rank() == 1) {
    absl::Status shorter = c->recv(twelve, 0);
    EXPECT_EQ(shorter.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(shorter.message()), HasSubstr("from rank 0: expected 48 bytes"));
    absl::Status longer = c->recv(ten, 0);
    EXPECT_EQ(longer.code(), absl::StatusCode::kInternal);
    EXPECT_THAT(std::string(longer.message()), HasSubstr("MPI_Recv (recv of 40 bytes on rank 1 from rank 0) failed: "));
    EXPECT_THAT(std::string(longer.message()), HasSubstr("truncated"));
  }
  EXPECT_TRUE(c->barrier().ok());
}

TEST(MpiCommunicator, PeersMustBeOtherRanksOfTheGroup) {
  std::unique_ptr<MpiCommunicator> c = world_comm();
  ASSERT_NE(c, nullptr);
  Tensor t = Tensor::zeros(DType::kF32, Shape{1});
  EXPECT_THAT(std::string(c->send(t, c->rank()).message()), HasSubstr("is not another rank"));
  EXPECT_EQ(c->recv(t, c->size()).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c->broadcast(t, -1).code(), absl::StatusCode::kInvalidArgument);
}

// Each tp x pp layout of the world: TP groups reduce and gather within their stage only, and
// activations flow stage to stage along (pp, tp) -> (pp + 1, tp).
TEST(MpiWorld, SplitIntoTensorAndPipelineGroups) {
  const int size = g_world->size();
  for (int tp = 1; tp <= size; ++tp) {
    if (size % tp != 0) continue;
    const int pp = size / tp;
    SCOPED_TRACE(testing::Message() << "tp=" << tp << " pp=" << pp);
    absl::StatusOr<WorldConfig> config = WorldConfig::create(g_world->rank(), size, tp, pp);
    ASSERT_TRUE(config.ok()) << config.status();
    absl::StatusOr<GroupComms> groups = g_world->split(*config);
    ASSERT_TRUE(groups.ok()) << groups.status();
    const int stage = config->pp_rank();
    EXPECT_EQ(groups->tp->size(), tp);
    EXPECT_EQ(groups->tp->rank(), config->tp_rank());
    EXPECT_EQ(groups->stages->rank(), g_world->rank());
    EXPECT_EQ(groups->prev_stage, stage == 0 ? -1 : g_world->rank() - tp);
    EXPECT_EQ(groups->next_stage, stage == pp - 1 ? -1 : g_world->rank() + tp);

    Tensor sum = Tensor::empty(DType::kF32, Shape{3});
    for (int i = 0; i < 3; ++i) sum.data_as<float>()[i] = float(g_world->rank() + i);
    ASSERT_TRUE(groups->tp->all_reduce_sum(sum).ok());
    float expected = 0;
    for (int t = 0; t < tp; ++t) expected += float(config->rank_of(stage, t));
    EXPECT_EQ(sum.data_as<float>()[0], expected);
    EXPECT_EQ(sum.data_as<float>()[2], expected + 2 * tp);

    Tensor mine = Tensor::empty(DType::kI32, Shape{1});
    mine.data_as<int32_t>()[0] = g_world->rank();
    Tensor all = Tensor::zeros(DType::kI32, Shape{tp});
    ASSERT_TRUE(groups->tp->all_gather(mine, all).ok());
    for (int t = 0; t < tp; ++t) EXPECT_EQ(all.data_as<int32_t>()[t], config->rank_of(stage, t));

    // Stage 0 starts the chain; every later stage receives, checks, then forwards its own.
    const int n = 300;
    Tensor act = Tensor::empty(DType::kF32, Shape{n});
    if (groups->prev_stage >= 0) {
      ASSERT_TRUE(groups->stages->recv(act, groups->prev_stage).ok());
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(act.data_as<float>()[i], float(groups->prev_stage * 1000 + i));
      }
    }
    if (groups->next_stage >= 0) {
      for (int i = 0; i < n; ++i) act.data_as<float>()[i] = float(g_world->rank() * 1000 + i);
      ASSERT_TRUE(groups->stages->send(act, groups->next_stage).ok());
    }
    ASSERT_TRUE(g_world->barrier().ok());
  }
}

TEST(MpiWorld, SplitRejectsAnotherWorldsLayout) {
  WorldConfig wrong{g_world->rank(), g_world->size() + 1, g_world->size() + 1, 1};
  absl::StatusOr<GroupComms> groups = g_world->split(wrong);
  ASSERT_FALSE(groups.ok());
  EXPECT_THAT(std::string(groups.status().message()), HasSubstr("this process is rank"));
}

StepPlan plan_for(int64_t step) {
  StepPlan plan;
  plan.step_id = step;
  for (int s = 0; s < 3; ++s) {
    PlannedChunk c;
    c.seq_id = 100 + s;
    for (int i = 0; i <= s * 40; ++i) c.token_ids.push_back(i * 7 + s);
    c.start_position = s * 16;
    const int positions = c.start_position + static_cast<int>(c.token_ids.size());
    for (int b = 0; b < (positions + 15) / 16; ++b) c.block_table.push_back(b * 3 + s);
    c.logits = s == 0 ? LogitsWanted::kLast : LogitsWanted::kNone;
    plan.chunks.push_back(c);
  }
  return plan;
}

TEST(MpiWorld, ControlChannelBroadcastsStepPlans) {
  for (size_t piece : {kDefaultMaxMpiMessageBytes, size_t{16}}) {
    g_world->set_max_message_bytes(piece);
    for (int root : {0, g_world->size() - 1}) {
      std::string bytes;
      if (g_world->rank() == root) bytes = encode_control({ControlKind::kStep, plan_for(root + 5)});
      ASSERT_TRUE(g_world->broadcast_bytes(bytes, root).ok());
      absl::StatusOr<ControlMessage> got = decode_control(bytes);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->kind, ControlKind::kStep);
      const StepPlan want = plan_for(root + 5);
      EXPECT_EQ(got->plan.step_id, want.step_id);
      ASSERT_EQ(got->plan.chunks.size(), want.chunks.size());
      for (size_t i = 0; i < want.chunks.size(); ++i) {
        EXPECT_EQ(got->plan.chunks[i].token_ids, want.chunks[i].token_ids);
        EXPECT_EQ(got->plan.chunks[i].block_table, want.chunks[i].block_table);
      }
    }
    std::string bye;
    if (g_world->rank() == 0) bye = encode_control({ControlKind::kShutdown, {}});
    ASSERT_TRUE(g_world->broadcast_bytes(bye, 0).ok());
    absl::StatusOr<ControlMessage> got = decode_control(bye);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->kind, ControlKind::kShutdown);
  }
  g_world->set_max_message_bytes(kDefaultMaxMpiMessageBytes);
}

TEST(MpiWorld, GatherBytesCollectsResultsInRankOrder) {
  g_world->set_max_message_bytes(10);
  const int root = g_world->size() - 1;
  StepResult mine;
  mine.step_id = 5;
  mine.sampled = {{g_world->rank(), g_world->rank() + 1, -0.5f}};
  if (g_world->rank() == 1) mine.sampled.clear();  // an empty message from one rank
  absl::StatusOr<std::vector<std::string>> all = g_world->gather_bytes(encode_step_result(mine), root);
  ASSERT_TRUE(all.ok()) << all.status();
  if (g_world->rank() == root) {
    ASSERT_EQ(static_cast<int>(all->size()), g_world->size());
    for (int r = 0; r < g_world->size(); ++r) {
      absl::StatusOr<StepResult> got = decode_step_result((*all)[r]);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->step_id, 5);
      if (r == 1) {
        EXPECT_TRUE(got->sampled.empty());
      } else {
        ASSERT_EQ(got->sampled.size(), 1u);
        EXPECT_EQ(got->sampled[0], (SampledTokenResult{r, r + 1, -0.5f}));
      }
    }
  } else {
    EXPECT_TRUE(all->empty());
  }
  g_world->set_max_message_bytes(kDefaultMaxMpiMessageBytes);
}

TEST(MpiWorld, SendRecvBytesMatchesTags) {
  REQUIRE_RANKS(2);
  g_world->set_max_message_bytes(100);
  const std::string first(1000, 'a');
  const std::string second = "tag two";
  if (g_world->rank() == 0) {
    for (int r = 1; r < g_world->size(); ++r) {
      ASSERT_TRUE(g_world->send_bytes(first, r, 1).ok());
      ASSERT_TRUE(g_world->send_bytes(second, r, 2).ok());
      ASSERT_TRUE(g_world->send_bytes("", r, 3).ok());
    }
  } else {
    // Tag 2 is taken before tag 1 although it was sent later.
    absl::StatusOr<std::string> two = g_world->recv_bytes(0, 2);
    absl::StatusOr<std::string> one = g_world->recv_bytes(0, 1);
    absl::StatusOr<std::string> empty = g_world->recv_bytes(0, 3);
    ASSERT_TRUE(two.ok() && one.ok() && empty.ok());
    EXPECT_EQ(*two, second);
    EXPECT_EQ(*one, first);
    EXPECT_EQ(*empty, "");
  }
  EXPECT_EQ(g_world->send_bytes("x", 0, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g_world->recv_bytes(g_world->rank(), 0).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(g_world->barrier().ok());
  g_world->set_max_message_bytes(kDefaultMaxMpiMessageBytes);
}

}  // namespace
}  // namespace weft
