// The StageRunner of one rank of a multi-rank job on a CUDA GPU: its tensor-parallel shard of its
// pipeline stage's layers (engine/cuda/cuda_weight_layout.h), its slice of the KV cache in device
// memory, and the same forward pass as CudaExecutor (cuda_forward.cpp) with the row-parallel sums
// over the TP group. StageWorker drives it as it drives the CPU runner, so plans, pipeline
// hand-offs and results travel as on CPUs.
//
// - The TP group's sums run over NCCL when its ranks have GPUs of their own, else (ranks sharing
//   a GPU, which NCCL refuses) over host memory (parallel/host_staged_communicator.h).
// - Hidden states cross pipeline stages as host F32 rows (StageRunner's contract): a stage copies
//   them in and out of the device.
// - The last stage copies its vocabulary shard's logits to the host, where the TP group gathers
//   them or merges their candidates (engine/vocab_shard_output.h).
// - Steps run eagerly (no CUDA graphs yet); KV tiers and attention recording are refused by name.
//
// Not yet run on a GPU: the CPU checks cover its weight layout and the host-staged communicator.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/cuda/cuda_executor.h"
#include "engine/cuda/cuda_weight_layout.h"
#include "engine/stage_runner.h"
#include "parallel/communicator.h"

namespace weft {

class CudaStageRunner final : public StageRunner {
 public:
  // Plans the rank's device memory on options.device, uploads its share of the weights and
  // allocates its KV pool (CudaExecutor::create's checks and errors). `host_tp` (borrowed) is
  // the TP group's host communicator. Not collective: join_tp_group() is.
  static absl::StatusOr<std::unique_ptr<CudaStageRunner>> create(const ModelConfig& config,
                                                                 const WeightStore& weights,
                                                                 const CudaExecutorOptions& options,
                                                                 const CudaRankShare& share,
                                                                 Communicator& host_tp);
  ~CudaStageRunner() override;

  // Collective over the TP group, once every rank has created its runner: learns which GPU each
  // rank uses and connects the group's device sums (NCCL, or host-staged when GPUs are shared).
  absl::Status join_tp_group();
  // "NCCL" or "host-staged" (after join_tp_group; "none" for a group of one).
  const char* tp_transport() const;
  int64_t num_kv_blocks() const;

  const ModelConfig& config() const override;
  absl::Status transfer_kv(const StepPlan& plan, KvLoadReport* report) override;
  absl::Status begin_step(const StepPlan& plan) override;
  absl::StatusOr<TensorView> incoming_hidden() override;
  absl::Status embed() override;
  absl::Status run_layers() override;
  absl::StatusOr<TensorView> outgoing_hidden() override;
  absl::StatusOr<StepOutput> output() override;
  std::vector<AttentionRecord> take_recorded_attention() override { return {}; }

  struct Impl;

 private:
  explicit CudaStageRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft
