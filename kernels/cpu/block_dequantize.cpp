// The reference dequantization of block-quantized rows (weft/kernels/block_quant.h). Built with
// -ffp-contract=off (kernels/CMakeLists.txt): a * (u - zero) + c must round twice, as ggml's
// dequantize_row_* does, to stay bit-exact with it.
#include <vector>

#include "cpu/block_unpack.h"
#include "cpu/isa.h"
#include "cpu/linear_block.h"
#include "weft/kernels/block_quant.h"

namespace weft::kernels {

void dequantize_row(DType dtype, const void* src, float* dst, int64_t n) {
  if (dtype == DType::kF8B64) return dequantize_f8b64_row(src, dst, n);
#if defined(__x86_64__)
  if (cpu::current_isa() == cpu::Isa::kAvx512) return cpu::dequantize_row_avx512(dtype, src, dst, n);
#endif
  const int64_t block = dtype_block_elems(dtype);
  const int64_t groups = block / cpu::kUnpackGroup;
  const int zero = cpu::unpack_zero(dtype);
  const size_t bytes = dtype_block_bytes(dtype);
  uint8_t u[256];
  float a[16], c[16];
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / block; ++i) {
    cpu::unpack_block(dtype, b + i * bytes, u, a, c);
    float* out = dst + i * block;
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t t = g * cpu::kUnpackGroup; t < (g + 1) * cpu::kUnpackGroup; ++t) {
        const float product = a[g] * static_cast<float>(static_cast<int>(u[t]) - zero);
        out[t] = product + c[g];
      }
    }
  }
}

}  // namespace weft::kernels
