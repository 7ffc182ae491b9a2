#include "weft/kernels/cuda/embedding.h"

#include "ops_common.cuh"

namespace weft::kernels::cuda {
namespace {

using detail::from_float;
using detail::to_float;

constexpr int kThreads = 256;

// One block per token. Same-dtype rows whose size fills 16-byte vectors move as 128-bit copies;
// otherwise (F32 output of a 16-bit table, odd widths) element by element, still coalesced.
template <typename Tin, typename Tout, bool kVec>
__global__ void embedding_kernel(const Tin* __restrict__ table, int64_t rows, int64_t hidden,
                                 const int32_t* __restrict__ ids, int64_t vocab_start,
                                 Tout* __restrict__ out) {
  const int64_t t = blockIdx.x;
  const int64_t local = static_cast<int64_t>(ids[t]) - vocab_start;
  Tout* dst = out + t * hidden;
  const bool inside = local >= 0 && local < rows;
  const Tin* src = table + (inside ? local : 0) * hidden;
  if constexpr (kVec) {
    constexpr int kN = detail::Vec16<Tin>::kN;
    const int64_t vecs = hidden / kN;
    for (int64_t v = threadIdx.x; v < vecs; v += blockDim.x) {
      detail::Vec16<Tout> r;
      if (inside) {
        r = detail::load16(reinterpret_cast<const Tout*>(src) + v * kN);
      } else {
        *reinterpret_cast<uint4*>(&r) = make_uint4(0, 0, 0, 0);
      }
      detail::store16(dst + v * kN, r);
    }
  } else {
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
      dst[i] = from_float<Tout>(inside ? to_float(src[i]) : 0.0f);
    }
  }
}

template <typename Tin, typename Tout>
absl::Status launch(const void* table, int64_t rows, int64_t hidden, const int32_t* ids,
                    int64_t tokens, int64_t vocab_start, void* out, cudaStream_t stream) {
  const auto* tp = static_cast<const Tin*>(table);
  auto* op = static_cast<Tout*>(out);
  if constexpr (std::is_same_v<Tin, Tout>) {
    if (detail::vec16_ok<Tin>(hidden, table, out)) {
      embedding_kernel<Tin, Tout, true>
          <<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(tp, rows, hidden, ids,
                                                                  vocab_start, op);
      return detail::launch_status("embedding_gather");
    }
  }
  embedding_kernel<Tin, Tout, false><<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(
      tp, rows, hidden, ids, vocab_start, op);
  return detail::launch_status("embedding_gather");
}

}  // namespace

absl::Status embedding_gather(const void* table, DType table_dtype, int64_t rows, int64_t hidden,
                              const int32_t* ids, int64_t tokens, int64_t vocab_start, void* out,
                              DType out_dtype, cudaStream_t stream) {
  if (rows < 0 || hidden <= 0 || tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat("embedding_gather: bad sizes rows=", rows,
                                                   " hidden=", hidden, " tokens=", tokens));
  }
  if (out_dtype != table_dtype && out_dtype != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrCat("embedding_gather: out dtype ",
                                                   dtype_name(out_dtype), " must be f32 or ",
                                                   dtype_name(table_dtype)));
  }
  if (tokens == 0) return absl::OkStatus();
  return detail::dispatch_float(table_dtype, "embedding_gather", "table dtype", [&](auto tag) {
    using Tin = typename decltype(tag)::type;
    if (out_dtype == table_dtype) {
      return launch<Tin, Tin>(table, rows, hidden, ids, tokens, vocab_start, out, stream);
    }
    return launch<Tin, float>(table, rows, hidden, ids, tokens, vocab_start, out, stream);
  });
}

}  // namespace weft::kernels::cuda
