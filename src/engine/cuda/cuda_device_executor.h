// The --device cuda factories: map the engine options onto CudaExecutorOptions and build the
// single-process CudaExecutor (LocalEngine) or one rank's CudaStageRunner (DistributedEngine)
// over the loaded model's checkpoint, on the rank's GPU.
#pragma once

#include "absl/status/statusor.h"
#include "engine/local_engine.h"
#include "engine/stage_runner.h"

namespace weft {

// The GPU a rank uses: `requested` (--cuda-device) when >= 0, else the rank's local rank on its
// host from the launcher's environment (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
// MPI_LOCALRANKID, LOCAL_RANK; 0 when none is set) modulo `device_count`. InvalidArgument when `requested`
// is not below device_count; FailedPrecondition when no GPU is visible.
absl::StatusOr<int> choose_cuda_device(int requested, int device_count);

// Errors: those of CudaExecutor::create (FailedPrecondition naming --device when no GPU is
// visible; --kv-cache-dtype other than the model's 16-bit dtype; memory plan errors).
absl::StatusOr<DeviceExecutor> make_cuda_device_executor(const RankModel& model,
                                                         const LocalEngineOptions& options);

// A DeviceStageRunnerFactory: the rank's CudaStageRunner. Errors: those of CudaStageRunner::create.
absl::StatusOr<DeviceStageRunner> make_cuda_stage_runner(const RankModel& model, const LocalEngineOptions& options,
                                                         const StageLayout& layout, Communicator& tp);

}  // namespace weft
