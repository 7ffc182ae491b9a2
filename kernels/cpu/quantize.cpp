#include "weft/kernels/quantize.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "cpu/isa.h"

namespace weft::kernels {

QuantizedRows quantize_rows_int8(const TensorView& w, ThreadPool& pool) {
  assert(w.shape.rank() == 2 && is_float_dtype(w.dtype));
  const int64_t n = w.shape[0], k = w.shape[1];
  QuantizedRows q{Tensor::empty(DType::kI8, Shape{n, k}), Tensor::empty(DType::kF32, Shape{n})};
  const size_t elem = dtype_size(w.dtype);
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t j = begin; j < end; ++j) {
      cpu::vec_ops().widen(w.dtype, static_cast<const char*>(w.data) + j * k * elem, row.data(), k);
      float max_abs = 0.0f;
      for (float v : row) max_abs = std::max(max_abs, std::fabs(v));
      const float scale = max_abs > 0.0f ? max_abs / 127.0f : 1.0f;
      int8_t* out = q.values.data_as<int8_t>() + j * k;
      for (int64_t t = 0; t < k; ++t) {
        const float r = std::nearbyint(row[static_cast<size_t>(t)] / scale);
        out[t] = static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
      }
      q.scales.data_as<float>()[j] = scale;
    }
  });
  return q;
}

}  // namespace weft::kernels
