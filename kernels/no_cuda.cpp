// The CUDA queries of a build without the CUDA backend (WEFT_CUDA=OFF): no GPU.
#include "weft/kernels/cuda_device.h"

namespace weft::kernels {

int cuda_device_count() { return 0; }
std::string cuda_device_description(int) { return ""; }

}  // namespace weft::kernels
