// AttentionProbe: which rows a pass records (the batch's logit rows), which heads it keeps (the
// selected ones of this rank's slice, under their global index), newest-wins per position, and
// the byte form the coordinator gathers.
#include "model/layers/attention_probe.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

ForwardBatch two_sequence_batch() {
  // Sequence 7: a 3-token prefill (positions 0-2, last row wanted); sequence 9: one decode token
  // at position 4.
  ForwardBatch b;
  b.num_tokens = 4;
  b.positions = Tensor::empty(DType::kI32, Shape{4});
  const int32_t pos[] = {0, 1, 2, 4};
  for (int i = 0; i < 4; ++i) b.positions.data_as<int32_t>()[i] = pos[i];
  b.query_start = {0, 3, 4};
  b.context_len = {3, 5};
  b.seq_ids = {7, 9};
  b.logit_rows = {2, 3};
  return b;
}

TEST(AttentionProbeTest, RecordsLogitRowsOfSelectedHeads) {
  AttentionProbe probe({{1}, {2, 5}});
  EXPECT_TRUE(probe.records_layer(1));
  EXPECT_FALSE(probe.records_layer(0));
  const ForwardBatch batch = two_sequence_batch();
  // This rank holds heads 4..7 (first_head 4, 4 local heads): of the selection only head 5.
  AttentionProbe::Pass pass = probe.begin(batch, 4);
  const kernels::AttentionWeightsOut* out = pass.out();
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->stride, 5);
  EXPECT_EQ(out->row[0], -1);
  EXPECT_EQ(out->row[1], -1);
  EXPECT_EQ(out->row[2], 0);
  EXPECT_EQ(out->row[3], 1);
  // What a kernel would write: row r, local head h, position p -> 100 r + 10 h + p.
  for (int r = 0; r < 2; ++r)
    for (int h = 0; h < 4; ++h)
      for (int p = 0; p < 5; ++p)
        out->weights[(r * 4 + h) * 5 + p] = static_cast<float>(100 * r + 10 * h + p);
  probe.end(pass, batch, 1, 4, 4);
  const std::vector<AttentionRecord> records = probe.records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].seq_id, 7);
  EXPECT_EQ(records[0].head, 5);
  EXPECT_EQ(records[0].position, 2);
  EXPECT_EQ(records[0].weights, (std::vector<float>{10, 11, 12}));
  EXPECT_EQ(records[1].seq_id, 9);
  EXPECT_EQ(records[1].position, 4);
  EXPECT_EQ(records[1].weights, (std::vector<float>{110, 111, 112, 113, 114}));

  // The same position recorded again (a recomputed row) keeps the newest weights.
  AttentionProbe::Pass again = probe.begin(batch, 4);
  std::fill(again.out()->weights, again.out()->weights + 2 * 4 * 5, 0.5f);
  probe.end(again, batch, 1, 4, 4);
  EXPECT_EQ(probe.records().size(), 2u);
  EXPECT_EQ(probe.records()[0].weights, (std::vector<float>{0.5f, 0.5f, 0.5f}));
}

TEST(AttentionProbeTest, PerSequenceSelectionsRecordOnlyTheirSequences) {
  // Sequence 9 alone, layer 1 head 0; sequence 7 (also in the batch) is not recorded.
  AttentionProbe probe = AttentionProbe::for_sequences({{9, {{1}, {0}}}, {4, {{2}, {1}}}});
  EXPECT_TRUE(probe.records_layer(1));
  EXPECT_TRUE(probe.records_layer(2));  // sequence 4's layer (not in this batch)
  EXPECT_FALSE(probe.records_layer(0));
  const ForwardBatch batch = two_sequence_batch();
  AttentionProbe::Pass pass = probe.begin(batch, 2);
  ASSERT_NE(pass.out(), nullptr);
  EXPECT_EQ(pass.out()->row[2], -1);  // sequence 7's logit row costs nothing
  EXPECT_EQ(pass.out()->row[3], 0);
  for (int h = 0; h < 2; ++h)
    for (int p = 0; p < 5; ++p) pass.out()->weights[h * 5 + p] = static_cast<float>(10 * h + p);
  probe.end(pass, batch, 1, 0, 2);
  // Layer 2 is sequence 4's: sequence 9 records nothing there.
  AttentionProbe::Pass other = probe.begin(batch, 2);
  probe.end(other, batch, 2, 0, 2);
  const std::vector<AttentionRecord> records = probe.records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].seq_id, 9);
  EXPECT_EQ(records[0].layer, 1);
  EXPECT_EQ(records[0].head, 0);
  EXPECT_EQ(records[0].weights, (std::vector<float>{0, 1, 2, 3, 4}));
}

TEST(AttentionProbeTest, NoLogitRowsRecordsNothing) {
  AttentionProbe probe({{0}, {0}});
  ForwardBatch batch = two_sequence_batch();
  batch.logit_rows.clear();
  AttentionProbe::Pass pass = probe.begin(batch, 2);
  EXPECT_EQ(pass.out(), nullptr);
  probe.end(pass, batch, 0, 0, 2);
  EXPECT_TRUE(probe.records().empty());
}

TEST(AttentionProbeTest, BytesRoundTripAndTruncationIsAnError) {
  std::vector<AttentionRecord> records = {{3, 1, 2, 11, {0.25f, 0.5f, 0.25f}},
                                          {0, 0, 0, 12, {1.0f}}};
  const std::string bytes = serialize_attention_records(records);
  auto back = parse_attention_records(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].layer, 3);
  EXPECT_EQ((*back)[0].head, 1);
  EXPECT_EQ((*back)[0].position, 2);
  EXPECT_EQ((*back)[0].seq_id, 11);
  EXPECT_EQ((*back)[0].weights, records[0].weights);
  EXPECT_EQ((*back)[1].weights, records[1].weights);
  for (size_t cut : {size_t{1}, size_t{20}, bytes.size() - 1}) {
    EXPECT_FALSE(parse_attention_records(bytes.substr(0, cut)).ok()) << cut;
  }
  EXPECT_TRUE(parse_attention_records("").ok());
  // Bytes from another rank that do not describe a row: refused, naming what is wrong.
  std::vector<AttentionRecord> short_row = {{0, 0, 3, 1, {0.5f, 0.5f}}};  // position 3 needs 4 weights
  auto refused = parse_attention_records(serialize_attention_records(short_row));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("position + 1"), std::string::npos) << refused.status();
  std::vector<AttentionRecord> negative = {{-1, 0, 0, 1, {1.0f}}};
  EXPECT_FALSE(parse_attention_records(serialize_attention_records(negative)).ok());
}

}  // namespace
}  // namespace weft
