#include "engine/cuda/cuda_device_executor.h"

#include "core/status_macros.h"
#include "engine/cuda/cuda_executor.h"

namespace weft {

absl::StatusOr<DeviceExecutor> make_cuda_device_executor(const RankModel& model,
                                                         const LocalEngineOptions& options) {
  CudaExecutorOptions o;
  o.block_size = options.kv.block_size;
  o.max_num_batched_tokens = options.scheduler.max_num_batched_tokens;
  o.max_num_seqs = options.scheduler.max_num_seqs;
  o.max_model_len = options.max_model_len;
  o.kv_memory_fraction = options.kv.memory_fraction;
  o.kv_memory_bytes = options.kv.memory_bytes;
  o.max_kv_blocks = options.kv.max_blocks;
  o.kv_dtype = options.kv.dtype;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor,
                        CudaExecutor::create(model.config, model.weights, o));
  DeviceExecutor out;
  out.num_kv_blocks = executor->num_kv_blocks();
  out.executor = std::move(executor);
  return out;
}

}  // namespace weft
