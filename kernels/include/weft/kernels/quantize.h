// Weight quantization at load time (--quantize int8): symmetric int8 with one F32 scale per
// output row (per channel), the layout linear_int8() multiplies by.
#pragma once

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

struct QuantizedRows {
  Tensor values;  // I8 [n, k]
  Tensor scales;  // F32 [n]: element (j, t) = values[j, t] * scales[j]
};

// w: F32, F16 or BF16 [n, k]. scale_j = max_t |w[j, t]| / 127 (an all-zero row gets scale 1 and
// zeros), values = round-half-even(w / scale_j), so |w - values * scale_j| <= scale_j / 2.
QuantizedRows quantize_rows_int8(const TensorView& w, ThreadPool& pool);

}  // namespace weft::kernels
