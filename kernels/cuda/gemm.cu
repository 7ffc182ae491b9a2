// CublasGemm: y = x W^T (+ bias) through cuBLASLt, with cuBLAS GemmEx as the fallback.
//
// Row-major operands in a column-major library. A row-major matrix [r, c] is, byte for byte, the
// column-major matrix [c, r] (its transpose) with leading dimension c. So, in column-major terms:
//   x (row-major [m, k])  is  x^T, a k x m matrix with ld k,
//   w (row-major [n, k])  is  w^T, a k x n matrix with ld k,
//   y (row-major [m, n])  is  y^T, an n x m matrix with ld n,
// and y = x w^T  <=>  y^T = w x^T = op_T(w^T) * x^T. The library therefore computes the n x m
// product D = op(A) * B with A = w (transposed, "T"), B = x (as is, "N"), D = y.
//
// A bias is not handed to cuBLAS: on an H200 both its BIAS epilogue (n = 17, 127) and C = bias
// with beta = 1 (k = 8, 64) gave 16-bit results off by up to half an ulp of x W^T, i.e. they
// rounded the product to the output type before adding. Instead the product of a biased call is
// written in F32 to a scratch (in row chunks that fit it) and bias_round_kernel adds the bias
// and rounds once, so the contract in gemm.h holds by construction.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "ops_common.cuh"
#include "weft/kernels/cuda/gemv.h"
#include "weft/kernels/cuda/gemm.h"

namespace weft::kernels::cuda {
namespace {

absl::Status cublas_check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("CublasGemm: ", call,
                                          " failed: ", cublasGetStatusName(status), " (",
                                          cublasGetStatusString(status), ")"));
}

absl::Status cuda_call_check(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("CublasGemm: ", call, " failed: ", cudaGetErrorString(err)));
}

// One problem shape's cuBLASLt descriptors and chosen algorithm, or `use_lt == false` when
// cuBLASLt offered none (or the operands are not 16-byte aligned) and cuBLAS GemmEx runs instead.
struct Plan {
  bool use_lt = false;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() { release(); }
  void release() {
    if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
    op = nullptr;
    a = b = d = nullptr;
    use_lt = false;
  }
};

struct PlanKey {
  int64_t m, n, k;
  DType dtype;
  bool aligned;
  bool f32_out;  // D in F32 (biased calls) instead of dtype
  bool operator==(const PlanKey& o) const {
    return m == o.m && n == o.n && k == o.k && dtype == o.dtype && aligned == o.aligned &&
           f32_out == o.f32_out;
  }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& key) const {
    uint64_t h = static_cast<uint64_t>(key.m) * 0x9e3779b97f4a7c15ull;
    h ^= static_cast<uint64_t>(key.n) + 0x7f4a7c159e3779b9ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(key.k) + 0x94d049bb133111ebull + (h << 6) + (h >> 2);
    h ^= (static_cast<uint64_t>(key.dtype) << 2) | (key.f32_out ? 2u : 0u) |
         (key.aligned ? 1u : 0u);
    return static_cast<size_t>(h);
  }
};

// y[r, c] = T(product[r, c] + bias[c]) over `rows` rows of n: one rounding, in F32 before it.
template <typename T>
__global__ void bias_round_kernel(const float* __restrict__ product, const T* __restrict__ bias,
                                  T* __restrict__ y, int64_t rows, int64_t n) {
  const int64_t total = rows * n;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = detail::from_float<T>(product[i] + detail::to_float(bias[i % n]));
  }
}


bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

struct CublasGemm::Impl {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  float* bias_scratch = nullptr;  // kBiasScratchBytes
  const char* last_path = "none";  // the path of the last linear() call
  bool use_gemv = false;
  std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans;

  ~Impl() {
    plans.clear();
    if (blas != nullptr) cublasDestroy(blas);
    if (lt != nullptr) cublasLtDestroy(lt);
    if (workspace != nullptr) cudaFree(workspace);
    if (bias_scratch != nullptr) cudaFree(bias_scratch);
  }

  // d[m, n] = x[m, k] @ w[n, k]^T, d in dtype or (f32_out) F32, through the shape's cached plan:
  // cuBLASLt, or GemmEx where cuBLASLt has no algorithm.
  absl::Status product(const void* x, const void* w, void* d, int64_t m, int64_t n, int64_t k,
                       DType dtype, bool aligned, bool f32_out) {
    const PlanKey key{m, n, k, dtype, aligned, f32_out};
    auto it = plans.find(key);
    if (it == plans.end()) {
      auto plan = std::make_unique<Plan>();
      WEFT_RETURN_IF_ERROR(make_plan(key, *plan));
      it = plans.emplace(key, std::move(plan)).first;
    }
    Plan& plan = *it->second;
    last_path = plan.use_lt ? "cublasLt" : "cublasGemmEx";
    const float alpha = 1.0f, beta = 0.0f;
    if (plan.use_lt) {
      return cublas_check(cublasLtMatmul(lt, plan.op, &alpha, w, plan.a, x, plan.b, &beta, d,
                                         plan.d, d, plan.d, &plan.algo, workspace, workspace_bytes,
                                         stream),
                          "cublasLtMatmul");
    }
    const cudaDataType_t type = dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_16BF;
    return cublas_check(
        cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                     static_cast<int>(k), &alpha, w, type, static_cast<int>(k), x, type,
                     static_cast<int>(k), &beta, d, f32_out ? CUDA_R_32F : type,
                     static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
  }

  // Builds the cuBLASLt plan for `key`; leaves use_lt false when cuBLASLt has no algorithm.
  absl::Status make_plan(const PlanKey& key, Plan& plan) {
    if (!key.aligned) return absl::OkStatus();
    const cudaDataType_t type = key.dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_16BF;
    WEFT_RETURN_IF_ERROR(
        cublas_check(cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                     "cublasLtMatmulDescCreate"));
    const cublasOperation_t trans_a = CUBLAS_OP_T;
    const cublasOperation_t trans_b = CUBLAS_OP_N;
    WEFT_RETURN_IF_ERROR(
        cublas_check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                    sizeof(trans_a)),
                     "cublasLtMatmulDescSetAttribute(TRANSA)"));
    WEFT_RETURN_IF_ERROR(
        cublas_check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                    sizeof(trans_b)),
                     "cublasLtMatmulDescSetAttribute(TRANSB)"));
    const uint64_t m = static_cast<uint64_t>(key.m), n = static_cast<uint64_t>(key.n),
                   k = static_cast<uint64_t>(key.k);
    WEFT_RETURN_IF_ERROR(cublas_check(cublasLtMatrixLayoutCreate(&plan.a, type, k, n, key.k),
                                      "cublasLtMatrixLayoutCreate(w)"));
    WEFT_RETURN_IF_ERROR(cublas_check(cublasLtMatrixLayoutCreate(&plan.b, type, k, m, key.k),
                                      "cublasLtMatrixLayoutCreate(x)"));
    WEFT_RETURN_IF_ERROR(cublas_check(
        cublasLtMatrixLayoutCreate(&plan.d, key.f32_out ? CUDA_R_32F : type, n, m, key.n),
        "cublasLtMatrixLayoutCreate(y)"));

    cublasLtMatmulPreference_t pref = nullptr;
    WEFT_RETURN_IF_ERROR(
        cublas_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate"));
    const uint64_t max_ws = workspace_bytes;
    cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws));
    // The operands are only promised to be 16-byte aligned (the default assumes 256).
    const uint32_t align = 16;
    for (auto attr :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      if (status == CUBLAS_STATUS_SUCCESS) {
        status = cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
      }
    }
    // Split-K partial sums are reduced in the F32 compute type (or not split at all), never in the
    // BF16/F16 output type, so the result is accumulated in F32 end to end as gemm.h promises.
    const uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    if (status == CUBLAS_STATUS_SUCCESS) {
      status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                    &reduction, sizeof(reduction));
    }
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    if (status == CUBLAS_STATUS_SUCCESS) {
      status = cublasLtMatmulAlgoGetHeuristic(lt, plan.op, plan.a, plan.b, plan.d, plan.d, pref, 1,
                                              &result, &returned);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    if (status != CUBLAS_STATUS_SUCCESS || returned == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
      // No cuBLASLt kernel for this shape / alignment: GemmEx handles every layout.
      plan.release();
      return absl::OkStatus();
    }
    plan.algo = result.algo;
    plan.use_lt = true;
    return absl::OkStatus();
  }
};

CublasGemm::CublasGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CublasGemm::~CublasGemm() = default;

cudaStream_t CublasGemm::stream() const { return impl_->stream; }
const char* CublasGemm::last_path() const { return impl_->last_path; }
void CublasGemm::set_use_gemv(bool use) { impl_->use_gemv = use; }

absl::StatusOr<std::unique_ptr<CublasGemm>> CublasGemm::create(cudaStream_t stream,
                                                               size_t workspace_bytes) {
  auto impl = std::make_unique<Impl>();
  impl->stream = stream;
  WEFT_RETURN_IF_ERROR(cublas_check(cublasLtCreate(&impl->lt), "cublasLtCreate"));
  WEFT_RETURN_IF_ERROR(cublas_check(cublasCreate(&impl->blas), "cublasCreate"));
  WEFT_RETURN_IF_ERROR(cublas_check(cublasSetStream(impl->blas, stream), "cublasSetStream"));
  // GemmEx's split-K partials are reduced in F32 too, not in the BF16/F16 output type.
  WEFT_RETURN_IF_ERROR(cublas_check(
      cublasSetMathMode(impl->blas, static_cast<cublasMath_t>(
                                        CUBLAS_DEFAULT_MATH |
                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
      "cublasSetMathMode"));
  if (workspace_bytes > 0) {
    WEFT_RETURN_IF_ERROR(
        cuda_call_check(cudaMalloc(&impl->workspace, workspace_bytes), "cudaMalloc(workspace)"));
    impl->workspace_bytes = workspace_bytes;
    // GemmEx shares the workspace (calls on one stream never overlap), which also keeps cuBLAS
    // from allocating during graph capture.
    WEFT_RETURN_IF_ERROR(cublas_check(
        cublasSetWorkspace(impl->blas, impl->workspace, workspace_bytes), "cublasSetWorkspace"));
  }
  WEFT_RETURN_IF_ERROR(
      cuda_call_check(cudaMalloc(&impl->bias_scratch, CublasGemm::kBiasScratchBytes),
                      "cudaMalloc(bias scratch)"));
  return std::unique_ptr<CublasGemm>(new CublasGemm(std::move(impl)));
}

absl::Status CublasGemm::linear(const void* x, const void* w, const void* bias, void* y, int64_t m,
                                int64_t n, int64_t k, DType dtype) {
  if (dtype != DType::kF16 && dtype != DType::kBF16) {
    return absl::InvalidArgumentError(absl::StrCat("CublasGemm::linear: dtype ", dtype_name(dtype),
                                                   " unsupported (expected f16 or bf16)"));
  }
  constexpr int64_t kMax = 0x7fffffff;
  if (m < 0 || n <= 0 || k <= 0 || m > kMax || n > kMax || k > kMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("CublasGemm::linear: sizes m=", m, ", n=", n, ", k=", k,
                     " out of range (expected 0 <= m and 0 < n, k, all below 2^31)"));
  }
  if (m == 0) return absl::OkStatus();
  if (x == nullptr || w == nullptr || y == nullptr) {
    return absl::InvalidArgumentError("CublasGemm::linear: x, w and y must be non-null");
  }
  Impl& s = *impl_;
  if (s.use_gemv && gemv_supported(m, k, x, w, y)) {
    s.last_path = "gemv";
    return gemv(x, w, bias, y, m, n, k, dtype, s.stream);
  }
  const bool aligned = aligned16(x) && aligned16(w) && aligned16(y);
  if (bias == nullptr) return s.product(x, w, y, m, n, k, dtype, aligned, /*f32_out=*/false);
  // Biased: F32 product chunks, then bias and one rounding (see the file comment).
  const int64_t chunk = static_cast<int64_t>(CublasGemm::kBiasScratchBytes / (sizeof(float) * n));
  if (chunk == 0) {
    return absl::InvalidArgumentError(absl::StrCat("CublasGemm::linear: n=", n,
                                                   " too wide for a biased product"));
  }
  const size_t es = dtype_size(dtype);
  for (int64_t r0 = 0; r0 < m; r0 += chunk) {
    const int64_t rows = std::min(chunk, m - r0);
    const char* xr = static_cast<const char*>(x) + r0 * k * es;
    WEFT_RETURN_IF_ERROR(s.product(xr, w, s.bias_scratch, rows, n, k, dtype,
                                   aligned16(xr) && aligned16(w), /*f32_out=*/true));
    const int blocks = static_cast<int>(std::min<int64_t>((rows * n + 255) / 256, 4096));
    char* out = static_cast<char*>(y) + r0 * n * es;
    if (dtype == DType::kF16) {
      bias_round_kernel<__half><<<blocks, 256, 0, s.stream>>>(
          s.bias_scratch, static_cast<const __half*>(bias), reinterpret_cast<__half*>(out), rows,
          n);
    } else {
      bias_round_kernel<__nv_bfloat16><<<blocks, 256, 0, s.stream>>>(
          s.bias_scratch, static_cast<const __nv_bfloat16*>(bias),
          reinterpret_cast<__nv_bfloat16*>(out), rows, n);
    }
    WEFT_RETURN_IF_ERROR(cuda_call_check(cudaGetLastError(), "bias_round_kernel"));
  }
  return absl::OkStatus();
}

}  // namespace weft::kernels::cuda
