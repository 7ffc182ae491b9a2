// Whether a CUDA GPU is usable in this process. Safe everywhere: without a GPU, a driver or the
// CUDA build (WEFT_CUDA=OFF) the count is 0, never a crash (cudaGetDeviceCount's errors mean
// "no GPU").
#pragma once

#include <string>

namespace weft::kernels {

int cuda_device_count();
// "NVIDIA H200 (sm_90, 139.8 GiB)", or "" when `device` does not exist.
std::string cuda_device_description(int device);

}  // namespace weft::kernels
