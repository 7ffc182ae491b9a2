#include "engine/cuda/cuda_device_executor.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/cuda/cuda_executor.h"
#include "engine/cuda/cuda_stage_runner.h"
#include "weft/kernels/cuda_device.h"

namespace weft {
namespace {

CudaExecutorOptions executor_options(const LocalEngineOptions& options, int device) {
  CudaExecutorOptions o;
  o.device = device;
  o.block_size = options.kv.block_size;
  o.max_num_batched_tokens = options.scheduler.max_num_batched_tokens;
  o.max_num_seqs = options.scheduler.max_num_seqs;
  o.max_model_len = options.max_model_len;
  o.kv_memory_fraction = options.kv.memory_fraction;
  o.kv_memory_bytes = options.kv.memory_bytes;
  o.max_kv_blocks = options.kv.max_blocks;
  o.kv_dtype = options.kv.dtype;
  return o;
}

}  // namespace

absl::StatusOr<int> choose_cuda_device(int requested, int device_count) {
  if (device_count <= 0) {
    return absl::FailedPreconditionError("--device cuda: no CUDA GPU is visible to this process; use --device cpu");
  }
  if (requested >= 0) {
    if (requested >= device_count) {
      return absl::InvalidArgumentError(absl::StrCat("--cuda-device ", requested, ": this process sees ", device_count,
                                                     " GPU(s), numbered from 0"));
    }
    return requested;
  }
  // As cluster/bind-gpu.sh reads it (which leaves each rank one visible GPU: index 0 here).
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "LOCAL_RANK"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
      return std::atoi(value) % device_count;
    }
  }
  return 0;
}

absl::StatusOr<DeviceExecutor> make_cuda_device_executor(const RankModel& model,
                                                         const LocalEngineOptions& options) {
  WEFT_ASSIGN_OR_RETURN(int device, choose_cuda_device(options.cuda_device, kernels::cuda_device_count()));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor,
                        CudaExecutor::create(model.config, model.weights, executor_options(options, device)));
  DeviceExecutor out;
  out.num_kv_blocks = executor->num_kv_blocks();
  out.executor = std::move(executor);
  return out;
}

absl::StatusOr<DeviceStageRunner> make_cuda_stage_runner(const RankModel& model, const LocalEngineOptions& options,
                                                         const StageLayout& layout, Communicator& tp) {
  const int count = kernels::cuda_device_count();
  WEFT_ASSIGN_OR_RETURN(int device, choose_cuda_device(options.cuda_device, count));
  CudaRankShare share;
  share.tp_rank = tp.rank();
  share.tp_size = tp.size();
  share.first_layer = layout.first_layer;
  share.end_layer = layout.end_layer;
  share.first_stage = layout.has_embedding;
  share.last_stage = layout.has_head;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<CudaStageRunner> runner,
                        CudaStageRunner::create(model.config, model.weights, executor_options(options, device), share, tp));
  DeviceStageRunner out;
  out.num_kv_blocks = runner->num_kv_blocks();
  out.description = absl::StrCat("GPU ", device, " of ", count, ", tensor-parallel rank ", share.tp_rank, " of ",
                                 share.tp_size, ", layers [", share.first_layer, ", ", share.end_layer, ")");
  out.runner = std::move(runner);
  return out;
}

}  // namespace weft
