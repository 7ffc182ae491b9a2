// Executes step plans on one rank: builds the ragged ForwardBatch, runs this rank's part of the
// model over its KV cache, and on the last pipeline stage returns the logits the plan asks for.
#pragma once

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "engine/step_executor.h"
#include "engine/step_plan.h"
#include "kv/kv_cache.h"
#include "model/decoder_model.h"
#include "model/forward_batch.h"
#include "parallel/communicator.h"

namespace weft {

// Builds the forward metadata of a plan (positions, KV slots, block tables, logit rows).
// Errors when a chunk's block table does not cover its tokens or names a block outside
// [0, num_blocks).
absl::StatusOr<ForwardBatch> build_forward_batch(const StepPlan& plan, int block_size,
                                                 int64_t num_blocks);

class ModelRunner {
 public:
  // Borrows everything; all must outlive the runner.
  ModelRunner(const DecoderModel& model, const KvCache& kv, Communicator& tp, ThreadPool& pool);

  // Runs `plan` on a single pipeline stage holding every layer (pp = 1). Returns, for each chunk
  // in order, its last token's row (kLast) or every token's (kAll), no rows for kNone: F32
  // [rows, vocab_size] logits, or the rows' argmax tokens when plan.greedy_on_last_stage.
  absl::StatusOr<StepOutput> execute(const StepPlan& plan);

  // The pieces of execute(), for pipeline stages: the first stage embeds, every stage runs its
  // layers over the residual stream, the last stage computes logits.
  absl::StatusOr<ForwardBatch> prepare(const StepPlan& plan) const;
  absl::StatusOr<Tensor> embed(const ForwardBatch& batch);
  absl::Status run_layers(const ForwardBatch& batch, const Tensor& hidden);
  absl::StatusOr<Tensor> logits(const ForwardBatch& batch, const Tensor& hidden);
  // The argmax token of each logits row (ties to the lowest id), found in each rank's vocabulary
  // shard and agreed over the TP group by exchanging one (value, id) pair per row.
  absl::StatusOr<std::vector<int32_t>> greedy_tokens(const ForwardBatch& batch, const Tensor& hidden);
  // logits() or greedy_tokens(), as the plan asks.
  absl::StatusOr<StepOutput> output(const StepPlan& plan, const ForwardBatch& batch, const Tensor& hidden);

  const DecoderModel& model() const { return model_; }

 private:
  ForwardContext context(const ForwardBatch& batch) const;

  const DecoderModel& model_;
  const KvCache& kv_;
  Communicator& tp_;
  ThreadPool& pool_;
};

}  // namespace weft
