#include <cuda_runtime.h>

#include <cstdio>

#include "weft/kernels/cuda_device.h"

namespace weft::kernels {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return count;
}

std::string cuda_device_description(int device) {
  cudaDeviceProp prop{};
  if (device < 0 || device >= cuda_device_count() ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    return "";
  }
  char memory[32];
  std::snprintf(memory, sizeof(memory), "%.1f GiB",
                static_cast<double>(prop.totalGlobalMem) / (1ull << 30));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + memory + ")";
}

}  // namespace weft::kernels
