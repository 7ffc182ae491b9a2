// Executes step plans on one rank: builds the ragged ForwardBatch, runs this rank's part of the
// model over its KV cache, and on the last pipeline stage returns the logits the plan asks for.
#pragma once

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "engine/sample_candidates.h"
#include "engine/step_executor.h"
#include "engine/step_plan.h"
#include "kv/kv_cache.h"
#include "kv/kv_host_store.h"
#include "model/decoder_model.h"
#include "model/forward_batch.h"
#include "parallel/communicator.h"

namespace weft {

// Builds the forward metadata of a plan (positions, KV slots, block tables, logit rows).
// Errors when a chunk's block table does not cover its tokens or names a block outside
// [0, num_blocks). BlockManager::kFreedBlock entries are accepted only for blocks no query of the
// chunk can read: with kv_window W > 0 (model_config.h), those ending at or before the chunk's
// first position - W + 1; with W = 0, none.
absl::StatusOr<ForwardBatch> build_forward_batch(const StepPlan& plan, int block_size,
                                                 int64_t num_blocks, int64_t kv_window = 0);

class ModelRunner {
 public:
  // Borrows everything; all must outlive the runner.
  ModelRunner(const DecoderModel& model, const KvCache& kv, Communicator& tp, ThreadPool& pool);

  // Gives the runner this rank's KV tier store (borrowed; null: none). A plan carrying tier
  // instructions needs one.
  void set_kv_store(KvHostStore* store) { kv_store_ = store; }
  // Performs the plan's KV tier instructions (StepPlan::kv_transfers) on this rank's slice: before
  // prepare/embed/run_layers of the same plan. A plain copy on the step's thread (memcpy of the
  // block slices; the disk writes themselves are queued to the disk tier's thread; a disk load,
  // kLoad, reads its file here). `report` (optional) receives this rank's outcome of the plan's
  // disk instructions (kv/kv_load_report.h).
  absl::Status transfer_kv(const StepPlan& plan, KvLoadReport* report = nullptr);

  // Runs `plan` on a single pipeline stage holding every layer (pp = 1), its KV transfers first. Returns, for each chunk
  // in order, its last token's row (kLast) or every token's (kAll), no rows for kNone: F32
  // [rows, vocab_size] logits, or (plan.sample_candidates) the rows' argmax tokens or candidates.
  absl::StatusOr<StepOutput> execute(const StepPlan& plan);

  // The pieces of execute(), for pipeline stages: the first stage embeds, every stage runs its
  // layers over the residual stream, the last stage computes logits.
  absl::StatusOr<ForwardBatch> prepare(const StepPlan& plan) const;
  absl::StatusOr<Tensor> embed(const ForwardBatch& batch);
  // With batch.record_attention (and no probe of set_attention_probe), also records those
  // sequences' attention rows, kept until take_recorded_attention().
  absl::Status run_layers(const ForwardBatch& batch, const Tensor& hidden);
  // The rows run_layers recorded for StepPlan::record_attention since the last call (this rank's
  // layers and heads).
  std::vector<AttentionRecord> take_recorded_attention();
  absl::StatusOr<Tensor> logits(const ForwardBatch& batch, const Tensor& hidden);
  // The min(k, vocab) best (token, logit) pairs of each logits row, best first (ties to the lower
  // id): each rank selects them in its vocabulary shard, and the TP group merges k pairs per row
  // per rank. k = 1 is the argmax. With `with_logsumexp`, also each row's log-sum-exp over the
  // whole vocabulary, from one (max, sum) part per rank.
  absl::StatusOr<SampleCandidates> top_candidates(const ForwardBatch& batch, const Tensor& hidden, int32_t k,
                                                  bool with_logsumexp);
  // logits(), or top_candidates() as argmax tokens (k = 1) or candidates, as the plan asks.
  absl::StatusOr<StepOutput> output(const StepPlan& plan, const ForwardBatch& batch, const Tensor& hidden);

  const DecoderModel& model() const { return model_; }
  // Set (weft inspect): every forward pass records attention weights into `probe` (borrowed;
  // null turns it off). Plans' record_attention is then not recorded apart.
  void set_attention_probe(AttentionProbe* probe) { attention_probe_ = probe; }

 private:
  ForwardContext context(const ForwardBatch& batch) const;

  const DecoderModel& model_;
  const KvCache& kv_;
  Communicator& tp_;
  ThreadPool& pool_;
  AttentionProbe* attention_probe_ = nullptr;
  std::vector<AttentionRecord> recorded_attention_;
  KvHostStore* kv_store_ = nullptr;
};

}  // namespace weft
