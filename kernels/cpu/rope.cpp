#include "weft/kernels/rope.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace weft::kernels {

void apply_rope(const TensorView& x, const TensorView& positions, const TensorView& inv_freq,
                float attention_scaling, ThreadPool& pool, const TensorView* table) {
  const int64_t tokens = x.shape[0];
  const int64_t heads = x.shape[1];
  const int64_t d = x.shape[2];
  const int64_t half = inv_freq.shape[inv_freq.shape.rank() - 1];  // rotary_dim / 2
  const int64_t tables = inv_freq.shape.rank() == 2 ? inv_freq.shape[0] : 1;
  assert(x.dtype == DType::kF32 && x.shape.rank() == 3 && 2 * half <= d);
  assert(positions.dtype == DType::kI32 && positions.numel() == tokens);
  assert(inv_freq.dtype == DType::kF32 &&
         (inv_freq.shape.rank() == 1 || inv_freq.shape.rank() == 2));
  assert(table == nullptr ? tables == 1
                          : (table->dtype == DType::kI32 && table->numel() == tokens));
  (void)tables;
  const int32_t* pos = positions.as<const int32_t>();
  const int32_t* row_of = table != nullptr ? table->as<const int32_t>() : nullptr;
  const float* freq_rows = inv_freq.as<const float>();
  float* xp = x.as<float>();
  pool.parallel_for(
      tokens,
      [&](int64_t begin, int64_t end) {
        // cos/sin once per token, shared by its heads; angles in F32 as Hugging Face computes them.
        std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
        for (int64_t t = begin; t < end; ++t) {
          const float p = static_cast<float>(pos[t]);
          const float* freq = freq_rows + (row_of != nullptr ? row_of[t] : 0) * half;
          for (int64_t i = 0; i < half; ++i) {
            const float a = p * freq[i];
            cs[i] = std::cos(a) * attention_scaling;
            sn[i] = std::sin(a) * attention_scaling;
          }
          for (int64_t h = 0; h < heads; ++h) {
            float* x1 = xp + (t * heads + h) * d;
            float* x2 = x1 + half;
            for (int64_t i = 0; i < half; ++i) {
              const float a = x1[i], b = x2[i];
              x1[i] = a * cs[i] - b * sn[i];
              x2[i] = b * cs[i] + a * sn[i];
            }
          }
        }
      },
      std::max<int64_t>(1, 4096 / std::max<int64_t>(1, heads * d)));
}

}  // namespace weft::kernels
