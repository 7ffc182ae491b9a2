#include "engine/step_plan_codec.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "proto/step_plan.pb.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

StepPlan sample_plan() {
  StepPlan plan;
  plan.step_id = 42;
  PlannedChunk prefill;
  prefill.seq_id = 7;
  prefill.token_ids = {1, 2, 3, 50000, 0};
  prefill.start_position = 16;
  prefill.block_table = {4, 9};
  prefill.logits = LogitsWanted::kNone;
  prefill.prompt_len = 40;
  PlannedChunk decode;
  decode.seq_id = 1LL << 40;
  decode.token_ids = {99};
  decode.start_position = 300;
  decode.block_table = {0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  decode.logits = LogitsWanted::kLast;
  decode.prompt_len = 12;
  PlannedChunk scored;
  scored.seq_id = 0;
  scored.token_ids = {5, 6, 7};
  scored.start_position = 0;
  scored.block_table = {21};
  scored.logits = LogitsWanted::kAll;
  PlannedChunk speculating;  // one known token and three guesses
  speculating.seq_id = 3;
  speculating.token_ids = {8, 9, 10, 11};
  speculating.start_position = 5;
  speculating.block_table = {20};
  speculating.logits = LogitsWanted::kAll;
  speculating.num_draft_tokens = 3;
  plan.chunks = {prefill, decode, scored, speculating};
  plan.sample_candidates = 40;
  plan.candidate_logsumexp = true;
  plan.kv_transfers = {KvTransfer::save(0xfedcba9876543210ULL, 3), KvTransfer::drop(5),
                       KvTransfer::restore(0xfedcba9876543210ULL, 21),
                       KvTransfer::persist(77, 4, 0x6a09e667f3bcc908ULL, {1, 2, 3, 50000}),
                       KvTransfer::load(78, 77, {4, 5, 6, 7})};
  plan.record_attention = {{1LL << 40, {{0, 5}, {2}}}, {3, {{1}, {0, 7}}}};
  return plan;
}

void expect_same(const StepPlan& a, const StepPlan& b) {
  EXPECT_EQ(a.step_id, b.step_id);
  EXPECT_EQ(a.sample_candidates, b.sample_candidates);
  EXPECT_EQ(a.candidate_logsumexp, b.candidate_logsumexp);
  ASSERT_EQ(a.chunks.size(), b.chunks.size());
  for (size_t i = 0; i < a.chunks.size(); ++i) {
    EXPECT_EQ(a.chunks[i].seq_id, b.chunks[i].seq_id);
    EXPECT_EQ(a.chunks[i].token_ids, b.chunks[i].token_ids);
    EXPECT_EQ(a.chunks[i].start_position, b.chunks[i].start_position);
    EXPECT_EQ(a.chunks[i].block_table, b.chunks[i].block_table);
    EXPECT_EQ(a.chunks[i].logits, b.chunks[i].logits);
    EXPECT_EQ(a.chunks[i].num_draft_tokens, b.chunks[i].num_draft_tokens);
    EXPECT_EQ(a.chunks[i].prompt_len, b.chunks[i].prompt_len);
  }
  EXPECT_EQ(a.kv_transfers, b.kv_transfers);
  ASSERT_EQ(a.record_attention.size(), b.record_attention.size());
  for (size_t i = 0; i < a.record_attention.size(); ++i) {
    EXPECT_EQ(a.record_attention[i].seq_id, b.record_attention[i].seq_id);
    EXPECT_EQ(a.record_attention[i].selection.layers, b.record_attention[i].selection.layers);
    EXPECT_EQ(a.record_attention[i].selection.heads, b.record_attention[i].selection.heads);
  }
}

// The wire form of `plan` after `edit` changed its protobuf message.
template <typename Edit>
std::string edited(const StepPlan& plan, Edit edit) {
  proto::StepPlan msg;
  EXPECT_TRUE(msg.ParseFromString(encode_step_plan(plan)));
  edit(msg);
  return msg.SerializeAsString();
}

void expect_rejected(const std::string& bytes, const std::string& needle) {
  absl::StatusOr<StepPlan> got = decode_step_plan(bytes);
  ASSERT_FALSE(got.ok()) << "accepted a plan that should fail with: " << needle;
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(needle));
}

TEST(StepPlanCodec, RoundTrip) {
  const StepPlan plan = sample_plan();
  absl::StatusOr<StepPlan> back = decode_step_plan(encode_step_plan(plan));
  ASSERT_TRUE(back.ok()) << back.status();
  expect_same(plan, *back);
}

TEST(StepPlanCodec, TokenIdsArePacked) {
  // Packed repeated int32: one tag + length, then one varint byte per small id (unpacked would
  // cost a tag byte more per id).
  StepPlan big = sample_plan();
  big.record_attention.clear();
  big.kv_transfers.clear();
  big.chunks[0].token_ids.assign(1000, 5);
  const std::string bytes = encode_step_plan(big);
  EXPECT_LT(bytes.size(), 1200u);
}

TEST(StepPlanCodec, GarbageIsAClearError) {
  absl::StatusOr<StepPlan> got = decode_step_plan(std::string("\xff\xff\xff\xff\x0f", 5));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("are not a valid weft.proto.StepPlan"));
}

TEST(StepPlanCodec, TruncatedBytesAreRejected) {
  const std::string bytes = encode_step_plan(sample_plan());
  for (size_t cut : {size_t{1}, bytes.size() / 2, bytes.size() - 1}) {
    EXPECT_FALSE(decode_step_plan(std::string_view(bytes).substr(0, cut)).ok()) << cut;
  }
}

TEST(StepPlanCodec, EmptyBytesAreAPlanWithoutChunks) {
  expect_rejected("", "has no chunks");
}

TEST(StepPlanCodec, RandomBytesNeverCrash) {
  std::mt19937 rng(1234);
  const std::string good = encode_step_plan(sample_plan());
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = good;
    // Flip a few bytes of a valid message: mostly invalid, sometimes still valid.
    for (int k = 0; k < 3; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    absl::StatusOr<StepPlan> got = decode_step_plan(bytes);
    if (got.ok()) {
      for (const PlannedChunk& c : got->chunks) {
        EXPECT_GE(c.start_position, 0);
        EXPECT_FALSE(c.token_ids.empty());
      }
    }
  }
}

TEST(StepPlanCodec, RejectsInvalidFields) {
  const StepPlan plan = sample_plan();
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.set_step_id(-1); }),
                  "step_id is -1");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_chunks(1)->set_start_position(-3); }),
                  "chunk 1 (seq_id 1099511627776): start_position is -3");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_chunks(0)->clear_token_ids(); }),
                  "chunk 0 (seq_id 7): token_ids is empty");
  expect_rejected(edited(plan, [](proto::StepPlan& m) {
                    m.clear_chunks();
                    m.clear_kv_transfers();
                  }),
                  "has no chunks");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_chunks(0)->set_prompt_len(-1); }),
                  "chunk 0 (seq_id 7): prompt_len is -1, expected 0..");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_chunks(2)->set_seq_id(7); }),
                  "more than one chunk");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_chunks(0)->set_seq_id(-2); }),
                  "seq_id must be >= 0");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_chunks(0)->set_token_ids(2, -5); }),
                  "token_ids[2] is -5");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_chunks(0)->set_block_table(1, -2); }),
                  "block_table[1] is -2, expected >= 0 or -1 (freed)");
  expect_rejected(edited(plan,
                         [](proto::StepPlan& m) {
                           m.mutable_chunks(0)->set_logits(static_cast<proto::LogitsWanted>(9));
                         }),
                  "logits is 9");
  expect_rejected(edited(plan,
                         [](proto::StepPlan& m) {
                           m.mutable_chunks(0)->set_start_position(
                               std::numeric_limits<int32_t>::max());
                         }),
                  "exceeds");
  expect_rejected(edited(plan,
                         [](proto::StepPlan& m) {
                           for (int i = 0; i < 30; ++i) m.mutable_chunks(2)->add_block_table(1);
                         }),
                  "blocks for only 3 positions");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_chunks(3)->set_num_draft_tokens(4); }),
                  "num_draft_tokens is 4 for 4 tokens");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_chunks(1)->set_num_draft_tokens(-1); }),
                  "num_draft_tokens is -1");
  expect_rejected(edited(plan,
                         [](proto::StepPlan& m) {
                           m.mutable_chunks(3)->set_logits(proto::LOGITS_LAST);
                         }),
                  "logits = all");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.set_sample_candidates(-1); }),
                  "sample_candidates is -1, expected 0..1024");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.set_sample_candidates(kMaxSampleCandidates + 1); }),
                  "sample_candidates is 1025");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.set_sample_candidates(0); }),
                  "candidate_logsumexp without sample_candidates");
  expect_rejected(edited(plan,
                         [](proto::StepPlan& m) {
                           m.mutable_kv_transfers(1)->set_kind(static_cast<proto::KvTransfer::Kind>(7));
                         }),
                  "kv_transfers[1]: kind is 7");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_kv_transfers(2)->set_block(-4); }),
                  "kv_transfers[2]: block is -4");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_record_attention(1)->set_seq_id(8); }),
                  "record_attention[1]: seq_id 8 is not a sequence of the plan");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_record_attention(1)->set_seq_id(1LL << 40); }),
                  "record_attention[1]: seq_id 1099511627776 is not a sequence of the plan, or is named twice");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_record_attention(0)->set_layers(1, -2); }),
                  "record_attention[0]: layer -2");
  expect_rejected(edited(plan, [](proto::StepPlan& m) { m.mutable_record_attention(0)->add_heads(-1); }),
                  "record_attention[0]: head -1");
}

TEST(StepPlanCodec, RejectsTooManyTokens) {
  proto::StepPlan msg;
  msg.set_step_id(1);
  for (int c = 0; c < 5; ++c) {
    proto::PlannedChunk* pc = msg.add_chunks();
    pc->set_seq_id(c);
    for (int64_t i = 0; i < kMaxPlanTokens / 4; ++i) pc->add_token_ids(1);
  }
  expect_rejected(msg.SerializeAsString(), "tokens in all");
}

TEST(StepPlanCodec, CheckAgainstModelLimits) {
  const StepPlan plan = sample_plan();
  EXPECT_TRUE(check_step_plan(plan, PlanLimits{}).ok());
  EXPECT_TRUE(check_step_plan(plan, PlanLimits{50001, 22, 16}).ok());
  absl::Status vocab = check_step_plan(plan, PlanLimits{50000, 0, 0});
  EXPECT_THAT(std::string(vocab.message()), HasSubstr("token_ids[3] = 50000 is outside [0, 50000)"));
  absl::Status blocks = check_step_plan(plan, PlanLimits{0, 21, 0});
  EXPECT_THAT(std::string(blocks.message()), HasSubstr("block_table[0] = 21 is outside [0, 21)"));
  // Chunk 0 needs 21 positions = 2 blocks of 16 but 3 of 8.
  absl::Status cover = check_step_plan(plan, PlanLimits{0, 0, 8});
  EXPECT_THAT(std::string(cover.message()), HasSubstr("chunk 0 (seq_id 7): block_table has 2 blocks, 3"));
}

TEST(StepResultCodec, RoundTripLogitsAndSampled) {
  StepResult r;
  r.step_id = 9;
  r.logits = Tensor::empty(DType::kF32, Shape{2, 3});
  const float values[] = {0.5f, -1.25f, 3e30f, -0.0f, std::numeric_limits<float>::infinity(),
                          1e-40f};
  std::copy(values, values + 6, r.logits.data_as<float>());
  r.sampled = {{7, 11, -0.25f}, {1LL << 40, 0, -std::numeric_limits<float>::infinity()}};
  absl::StatusOr<StepResult> back = decode_step_result(encode_step_result(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->step_id, 9);
  ASSERT_TRUE(back->logits.defined());
  EXPECT_EQ(back->logits.shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(std::memcmp(&back->logits.data_as<float>()[i], &values[i], 4), 0) << i;
  }
  EXPECT_EQ(back->sampled, r.sampled);
  EXPECT_TRUE(back->error.empty());
}

TEST(StepResultCodec, RoundTripCandidates) {
  StepResult r;
  r.step_id = 4;
  r.candidates.per_row = 3;
  r.candidates.ids = {9, 2, 5, 0, 1, -1};
  r.candidates.logits = {2.5f, 2.5f, -1.0f, 7.0f, -std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity()};
  r.candidates.logsumexp = {3.25f, 7.5f};
  absl::StatusOr<StepResult> back = decode_step_result(encode_step_result(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->logits.defined());
  EXPECT_EQ(back->candidates.per_row, 3);
  EXPECT_EQ(back->candidates.rows(), 2);
  EXPECT_EQ(back->candidates.ids, r.candidates.ids);
  EXPECT_EQ(back->candidates.logits, r.candidates.logits);
  EXPECT_EQ(back->candidates.logsumexp, r.candidates.logsumexp);
}

TEST(StepResultCodec, RejectsInconsistentCandidates) {
  auto decode = [](const proto::StepResult& m) { return decode_step_result(m.SerializeAsString()); };
  proto::StepResult m;
  m.set_step_id(1);
  m.set_candidates_per_row(2);
  for (int i = 0; i < 4; ++i) {
    m.add_candidate_ids(i);
    m.add_candidate_logits(1.0f);
  }
  EXPECT_TRUE(decode(m).ok());
  m.add_candidate_ids(4);
  EXPECT_THAT(std::string(decode(m).status().message()),
              HasSubstr("5 candidate ids and 4 candidate logits do not make whole rows of 2"));
  m.add_candidate_logits(1.0f);
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("do not make whole rows of 2"));
  m.add_candidate_ids(5);
  m.add_candidate_logits(std::nanf(""));
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("candidate 5: id 5 logit nan"));
  m.set_candidate_logits(5, std::numeric_limits<float>::infinity());
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("candidate 5: id 5 logit inf"));
  m.set_candidate_logits(5, 0.0f);
  m.set_candidate_ids(0, -2);
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("candidate 0: id -2"));
  m.set_candidate_ids(0, 0);
  m.add_candidate_logsumexp(1.0f);
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("1 candidate log-sum-exps for 3 rows"));
  m.add_candidate_logsumexp(1.0f);
  m.add_candidate_logsumexp(std::nanf(""));
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("a candidate log-sum-exp is nan"));
  m.set_candidate_logsumexp(2, 1.0f);
  EXPECT_TRUE(decode(m).ok());
  m.set_candidates_per_row(kMaxSampleCandidates + 1);
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("candidates_per_row is 1025"));
  m.set_candidates_per_row(0);
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("do not make whole rows of 0"));
}

TEST(StepResultCodec, RoundTripErrorOnly) {
  StepResult r;
  r.step_id = 3;
  r.error = "rank 2: out of KV blocks";
  absl::StatusOr<StepResult> back = decode_step_result(encode_step_result(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->logits.defined());
  EXPECT_TRUE(back->sampled.empty());
  EXPECT_EQ(back->error, r.error);
}

TEST(StepResultCodec, RoundTripAttentionRows) {
  StepResult r;
  r.step_id = 4;
  r.sampled = {{3, 1, -0.5f}};
  r.attention = {{2, 1, 2, 3, {0.25f, 0.5f, 0.25f}}, {0, 7, 0, 3, {1.0f}}};
  absl::StatusOr<StepResult> back = decode_step_result(encode_step_result(r));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->attention.size(), 2u);
  EXPECT_EQ(back->attention[0].layer, 2);
  EXPECT_EQ(back->attention[0].head, 1);
  EXPECT_EQ(back->attention[0].position, 2);
  EXPECT_EQ(back->attention[0].seq_id, 3);
  EXPECT_EQ(back->attention[0].weights, r.attention[0].weights);
  EXPECT_EQ(back->attention[1].head, 7);
  // Rows that do not hold position + 1 weights are refused, naming the step.
  proto::StepResult m;
  ASSERT_TRUE(m.ParseFromString(encode_step_result(r)));
  m.set_attention(m.attention().substr(0, m.attention().size() - 4));
  absl::StatusOr<StepResult> cut = decode_step_result(m.SerializeAsString());
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(std::string(cut.status().message()), HasSubstr("step result 4: attention records"));
}

TEST(StepPlanCodec, APlanOfTierInstructionsAloneRoundTrips) {
  // Disk loads a waiting sequence needs, sent while nothing else runs (Engine::step).
  StepPlan plan;
  plan.step_id = 9;
  plan.kv_transfers = {KvTransfer::load(78, 77, {4, 5, 6, 7}), KvTransfer::drop(5)};
  absl::StatusOr<StepPlan> back = decode_step_plan(encode_step_plan(plan));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->chunks.empty());
  EXPECT_EQ(back->kv_transfers, plan.kv_transfers);
}

TEST(StepResultCodec, RoundTripTheRanksKvLoadReport) {
  StepResult r;
  r.step_id = 5;
  r.kv_load_report = KvLoadReport{false, {1, 0, 1}};
  absl::StatusOr<StepResult> back = decode_step_result(encode_step_result(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kv_load_report, r.kv_load_report);
  r.kv_load_report.reset();
  back = decode_step_result(encode_step_result(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->kv_load_report.has_value());
}

TEST(StepResultCodec, RejectsInconsistentResults) {
  auto decode = [](const proto::StepResult& m) {
    return decode_step_result(m.SerializeAsString());
  };
  proto::StepResult m;
  m.set_step_id(1);
  m.set_rows(2);
  m.set_vocab(3);
  for (int i = 0; i < 5; ++i) m.add_logits(0.0f);
  EXPECT_THAT(std::string(decode(m).status().message()),
              HasSubstr("5 logits for rows 2 x vocab 3 = 6"));
  m.add_logits(0.0f);
  EXPECT_TRUE(decode(m).ok());
  m.set_rows(-1);
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("rows is -1"));
  m.set_rows(2);
  proto::SampledToken* t = m.add_sampled();
  t->set_seq_id(1);
  t->set_token(2);
  t->set_logprob(std::nanf(""));
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("sampled[0]: logprob is nan"));
  t->set_logprob(-1.0f);
  t->set_token(-4);
  EXPECT_THAT(std::string(decode(m).status().message()), HasSubstr("token is -4"));
  EXPECT_FALSE(decode_step_result(std::string("\x0a\xff", 2)).ok());
}

TEST(ControlCodec, StepAndShutdown) {
  ControlMessage step{ControlKind::kStep, sample_plan()};
  absl::StatusOr<ControlMessage> back = decode_control(encode_control(step));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kind, ControlKind::kStep);
  expect_same(step.plan, back->plan);

  absl::StatusOr<ControlMessage> bye = decode_control(encode_control({ControlKind::kShutdown, {}}));
  ASSERT_TRUE(bye.ok()) << bye.status();
  EXPECT_EQ(bye->kind, ControlKind::kShutdown);
}

TEST(ControlCodec, RejectsUnknownKindAndBadPlan) {
  EXPECT_THAT(std::string(decode_control("").status().message()), HasSubstr("kind is 0"));
  proto::Control m;
  m.set_kind(proto::Control::STEP);
  EXPECT_THAT(std::string(decode_control(m.SerializeAsString()).status().message()),
              HasSubstr("without a plan"));
  m.mutable_plan()->set_step_id(4);
  EXPECT_THAT(std::string(decode_control(m.SerializeAsString()).status().message()),
              HasSubstr("step plan 4: has no chunks"));
}

}  // namespace
}  // namespace weft
