#include "weft/kernels/embedding.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "cpu/isa.h"
#include "weft/kernels/block_quant.h"

namespace weft::kernels {

void embedding_lookup(const TensorView& table, const TensorView& ids, int64_t vocab_start,
                      const TensorView& out, ThreadPool& pool) {
  const int64_t rows = table.shape[0];
  const int64_t h = table.shape[1];
  const int64_t tokens = ids.numel();
  assert(table.shape.rank() == 2 && (is_float_dtype(table.dtype) || is_block_quantized(table.dtype)));
  assert(ids.dtype == DType::kI32 && out.dtype == DType::kF32 && out.numel() == tokens * h);
  const cpu::VecOps& ops = cpu::vec_ops();
  const int32_t* id = ids.as<const int32_t>();
  const char* tp = static_cast<const char*>(table.data);
  const size_t row_bytes = dtype_nbytes(table.dtype, h);
  const bool block_quantized = is_block_quantized(table.dtype);
  float* op = out.as<float>();
  pool.parallel_for(
      tokens,
      [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t local = static_cast<int64_t>(id[t]) - vocab_start;
          float* dst = op + t * h;
          if (local < 0 || local >= rows) {
            std::memset(dst, 0, static_cast<size_t>(h) * sizeof(float));
          } else if (block_quantized) {
            dequantize_row(table.dtype, tp + local * row_bytes, dst, h);
          } else {
            ops.widen(table.dtype, tp + local * row_bytes, dst, h);
          }
        }
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, h)));
}

}  // namespace weft::kernels
