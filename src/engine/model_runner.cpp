#include "engine/model_runner.h"
#include "engine/vocab_shard_output.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kv/block_manager.h"
#include "model/layers/attention_probe.h"

namespace weft {

absl::StatusOr<ForwardBatch> build_forward_batch(const StepPlan& plan, int block_size,
                                                 int64_t num_blocks, int64_t kv_window) {
  ForwardBatch batch;
  batch.num_tokens = plan.num_tokens();
  batch.block_size = block_size;
  for (const PlannedChunk& c : plan.chunks) {
    batch.max_blocks_per_seq =
        std::max(batch.max_blocks_per_seq, static_cast<int>(c.block_table.size()));
  }
  batch.token_ids = Tensor::empty(DType::kI32, Shape{batch.num_tokens});
  batch.positions = Tensor::empty(DType::kI32, Shape{batch.num_tokens});
  batch.slots = Tensor::empty(DType::kI64, Shape{batch.num_tokens});
  batch.block_tables.assign(plan.chunks.size() * std::max(1, batch.max_blocks_per_seq), 0);
  batch.query_start.push_back(0);

  int32_t* ids = batch.token_ids.data_as<int32_t>();
  int32_t* positions = batch.positions.data_as<int32_t>();
  int64_t* slots = batch.slots.data_as<int64_t>();
  int32_t row = 0;
  for (size_t s = 0; s < plan.chunks.size(); ++s) {
    const PlannedChunk& c = plan.chunks[s];
    const int64_t len = static_cast<int64_t>(c.token_ids.size());
    const int64_t context = c.start_position + len;
    if (len == 0) return absl::InvalidArgumentError(absl::StrCat("sequence ", c.seq_id, ": empty chunk"));
    if (static_cast<int64_t>(c.block_table.size()) * block_size < context) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sequence ", c.seq_id, ": block table of ", c.block_table.size(),
          " blocks does not cover ", context, " tokens (start ", c.start_position, ", ", len, " tokens)"));
    }
    // Blocks [0, freeable) end before the first key any query of the chunk sees.
    const int64_t freeable =
        kv_window > 0 ? std::max<int64_t>(0, c.start_position - kv_window + 1) / block_size : 0;
    for (size_t b = 0; b < c.block_table.size(); ++b) {
      if (c.block_table[b] == BlockManager::kFreedBlock && static_cast<int64_t>(b) < freeable) {
        batch.block_tables[s * batch.max_blocks_per_seq + b] = c.block_table[b];
        continue;
      }
      if (c.block_table[b] < 0 || c.block_table[b] >= num_blocks) {
        return absl::InvalidArgumentError(absl::StrCat("sequence ", c.seq_id, ": block id ",
                                                       c.block_table[b], " outside [0, ",
                                                       num_blocks, ")"));
      }
      batch.block_tables[s * batch.max_blocks_per_seq + b] = c.block_table[b];
    }
    for (int64_t i = 0; i < len; ++i) {
      const int32_t pos = c.start_position + static_cast<int32_t>(i);
      ids[row + i] = c.token_ids[i];
      positions[row + i] = pos;
      slots[row + i] = static_cast<int64_t>(c.block_table[pos / block_size]) * block_size +
                       pos % block_size;
    }
    if (c.logits == LogitsWanted::kLast) batch.logit_rows.push_back(row + static_cast<int32_t>(len) - 1);
    if (c.logits == LogitsWanted::kAll) {
      for (int64_t i = 0; i < len; ++i) batch.logit_rows.push_back(row + static_cast<int32_t>(i));
    }
    row += static_cast<int32_t>(len);
    batch.query_start.push_back(row);
    batch.context_len.push_back(static_cast<int32_t>(context));
    batch.seq_ids.push_back(c.seq_id);
    batch.prompt_len.push_back(c.prompt_len);
  }
  batch.record_attention = plan.record_attention;
  return batch;
}

ModelRunner::ModelRunner(const DecoderModel& model, const KvCache& kv, Communicator& tp,
                         ThreadPool& pool)
    : model_(model), kv_(kv), tp_(tp), pool_(pool) {}

ForwardContext ModelRunner::context(const ForwardBatch& batch) const {
  return ForwardContext{batch, model_.rope_inv_freq(), model_.rope_attention_scaling(), tp_, pool_, nullptr,
                        attention_probe_};
}

absl::StatusOr<ForwardBatch> ModelRunner::prepare(const StepPlan& plan) const {
  return build_forward_batch(plan, kv_.shape().block_size, kv_.num_blocks(), kv_window(model_.config()));
}

absl::StatusOr<Tensor> ModelRunner::embed(const ForwardBatch& batch) {
  Tensor hidden = Tensor::empty(DType::kF32, Shape{batch.num_tokens, model_.config().hidden_size});
  WEFT_RETURN_IF_ERROR(model_.embed(context(batch), hidden.view()));
  return hidden;
}

absl::Status ModelRunner::run_layers(const ForwardBatch& batch, const Tensor& hidden) {
  if (batch.record_attention.empty() || attention_probe_ != nullptr) {
    return model_.run_layers(context(batch), kv_, hidden.view());
  }
  AttentionProbe probe = AttentionProbe::for_sequences(batch.record_attention);
  ForwardContext fc = context(batch);
  fc.attention_probe = &probe;
  WEFT_RETURN_IF_ERROR(model_.run_layers(fc, kv_, hidden.view()));
  std::vector<AttentionRecord> records = probe.records();
  recorded_attention_.insert(recorded_attention_.end(), std::make_move_iterator(records.begin()),
                             std::make_move_iterator(records.end()));
  return absl::OkStatus();
}

std::vector<AttentionRecord> ModelRunner::take_recorded_attention() {
  std::vector<AttentionRecord> records = std::move(recorded_attention_);
  recorded_attention_.clear();
  return records;
}

absl::StatusOr<Tensor> ModelRunner::logits(const ForwardBatch& batch, const Tensor& hidden) {
  WEFT_ASSIGN_OR_RETURN(Tensor local, model_.local_logits(context(batch), hidden.view()));
  return gather_vocab_logits(local, model_.config().vocab_size, tp_);
}

absl::StatusOr<SampleCandidates> ModelRunner::top_candidates(const ForwardBatch& batch, const Tensor& hidden,
                                                              int32_t k, bool with_logsumexp) {
  WEFT_ASSIGN_OR_RETURN(Tensor local, model_.local_logits(context(batch), hidden.view()));
  return vocab_shard_candidates(local, model_.lm_head_shard().begin, model_.config().vocab_size, k, with_logsumexp,
                                tp_);
}

absl::StatusOr<StepOutput> ModelRunner::output(const StepPlan& plan, const ForwardBatch& batch,
                                               const Tensor& hidden) {
  WEFT_ASSIGN_OR_RETURN(Tensor local, model_.local_logits(context(batch), hidden.view()));
  return vocab_shard_output(local, model_.lm_head_shard().begin, model_.config().vocab_size, plan.sample_candidates,
                            plan.candidate_logsumexp, tp_);
}

absl::Status ModelRunner::transfer_kv(const StepPlan& plan, KvLoadReport* report) {
  if (plan.kv_transfers.empty()) return absl::OkStatus();
  if (kv_store_ == nullptr) {
    return absl::InternalError(absl::StrCat("step plan ", plan.step_id, " carries ", plan.kv_transfers.size(),
                                            " KV tier instructions, but this rank has no KV tiers"));
  }
  return kv_store_->apply(plan.kv_transfers, report);
}

absl::StatusOr<StepOutput> ModelRunner::execute(const StepPlan& plan) {
  WEFT_RETURN_IF_ERROR(transfer_kv(plan));
  WEFT_ASSIGN_OR_RETURN(ForwardBatch batch, prepare(plan));
  WEFT_ASSIGN_OR_RETURN(Tensor hidden, embed(batch));
  WEFT_RETURN_IF_ERROR(run_layers(batch, hidden));
  WEFT_ASSIGN_OR_RETURN(StepOutput out, output(plan, batch, hidden));
  out.attention = take_recorded_attention();
  return out;
}

}  // namespace weft
