// Portable path of linear_block_quantized(): exact int32 sums per group of 16 in scalar code.
#include "cpu/isa.h"
#include "cpu/linear_block_rows.h"

namespace weft::kernels::cpu {
namespace {

struct PortableKernel {
  static constexpr int kOffset = 0;

  template <int MR>
  static void tile(const BlockLinearProblem& p, const uint8_t* u, const float* a, const float* c,
                   int64_t i, float* out) {
    for (int r = 0; r < MR; ++r) {
      const int8_t* x = p.xq + (i + r) * p.k_pad;
      const float* xd = p.xd + (i + r) * p.groups;
      float acc = 0.0f;
      for (int64_t g = 0; g < p.groups; ++g) {
        int32_t dot = 0;
        for (int64_t t = g * kUnpackGroup; t < (g + 1) * kUnpackGroup; ++t) dot += u[t] * x[t];
        acc += static_cast<float>(dot) * (a[g] * xd[g]);
      }
      float offsets;
      kVecOpsPortable.dot_rows(c, p.xs + (i + r) * p.groups, 1, p.groups, 0, 1.0f, &offsets);
      out[r] = acc + offsets;
    }
  }
};

}  // namespace

void linear_block_q_portable(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                             int64_t j1) {
  block_rows<PortableKernel>(p, i0, i1, j0, j1);
}

}  // namespace weft::kernels::cpu
