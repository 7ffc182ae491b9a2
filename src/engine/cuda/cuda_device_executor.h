// The LocalEngine's --device cuda executor factory: maps the engine options onto
// CudaExecutorOptions and builds a CudaExecutor over the loaded model's checkpoint.
#pragma once

#include "absl/status/statusor.h"
#include "engine/local_engine.h"

namespace weft {

// Errors: those of CudaExecutor::create (FailedPrecondition naming --device when no GPU is
// visible; --kv-cache-dtype other than the model's 16-bit dtype; memory plan errors).
absl::StatusOr<DeviceExecutor> make_cuda_device_executor(const RankModel& model,
                                                         const LocalEngineOptions& options);

}  // namespace weft
