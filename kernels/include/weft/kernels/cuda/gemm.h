// Dense products of activations with weights on the GPU through cuBLASLt (cuBLAS as fallback):
// the CUDA twin of weft/kernels/linear.h. Valid C++17 (included by .cu files).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/dtype.h"

namespace weft::kernels::cuda {

// Owns the cuBLASLt and cuBLAS handles, a device workspace and the chosen algorithm per problem
// shape, for one stream. Create one per stream, once (handle creation and the workspace
// allocation synchronize the device); not thread-safe. Every call enqueues on that stream and
// returns without waiting, so calls can be captured in a CUDA graph once each shape has been
// seen (the first call of a shape queries the cuBLASLt heuristics on the host).
class CublasGemm {
 public:
  // 32 MiB is what cuBLASLt's Hopper kernels may use for split-K reductions.
  static constexpr size_t kDefaultWorkspaceBytes = size_t{32} << 20;
  // Device memory each instance also holds: the F32 products of biased calls, in row chunks.
  static constexpr size_t kBiasScratchBytes = size_t{16} << 20;

  // Internal (naming the failed call) when a handle or the workspace cannot be created.
  static absl::StatusOr<std::unique_ptr<CublasGemm>> create(
      cudaStream_t stream, size_t workspace_bytes = kDefaultWorkspaceBytes);
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  // y[m, n] = x[m, k] @ w[n, k]^T (+ bias[n]), all device memory of `dtype` (F16 or BF16),
  // row-major and contiguous: x [m, k], w [n, k] (the Hugging Face [out_features, in_features]
  // layout), bias [n] or null, y [m, n] (must not alias x or w). Products are accumulated in F32
  // and y is rounded once to `dtype` (bias added before that rounding). Products go through
  // cuBLASLt, or cuBLAS GemmEx where it has no plan; after set_use_gemv(true), decode shapes
  // (gemv_supported) go through weft's gemv kernel instead.
  // m == 0 is a no-op. InvalidArgument for another dtype, negative or over-2^31 sizes, or a null
  // pointer; Internal (naming the cuBLAS call and its status) when cuBLAS fails.
  absl::Status linear(const void* x, const void* w, const void* bias, void* y, int64_t m, int64_t n,
                      int64_t k, DType dtype);

  cudaStream_t stream() const;
  // true: decode shapes go to weft's gemv kernel (opt-in; see gemv.h). Default false.
  void set_use_gemv(bool use);
  // What served the last linear() call ("gemv", "cublasLt" or "cublasGemmEx"), for test and
  // benchmark reports.
  const char* last_path() const;

 private:
  struct Impl;
  explicit CublasGemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::kernels::cuda
