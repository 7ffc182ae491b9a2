// cuBLAS and cuBLASLt, loaded on first use instead of linked.
//
// Why: libcublasLt is a 600 MB library whose static data alone (about 85 MB of .bss touched at
// load) plus its mapped pages added some 140 MB to the resident memory of every weft process,
// including CPU-only runs of a CUDA-enabled build that never call it (issue 12: weights held
// once, resident memory close to the weights). weft_kernels therefore does not link cuBLAS; this
// file defines the cuBLAS / cuBLASLt entry points kernels/cuda/gemm.cu calls, each forwarding to
// the real function, which it looks up with dlopen / dlsym the first time it is called.
//
// Contract: the definitions below have exactly the prototypes of the toolkit headers (the
// compiler checks it: a mismatch is an error against the header's declaration). When the
// library cannot be loaded, every call returns CUBLAS_STATUS_NOT_INITIALIZED and
// cublasGetStatusString names the library and dlerror(), so CublasGemm::create fails with a
// message instead of the process failing to start.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

namespace {

#define WEFT_STR2(x) #x
#define WEFT_STR(x) WEFT_STR2(x)

struct Library {
  explicit Library(const char* name) : soname(name) {}
  const char* soname;
  std::once_flag once;
  void* handle = nullptr;
  std::string error;

  void* symbol(const char* name) {
    std::call_once(once, [this] {
      handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* e = dlerror();
        error = std::string(soname) + " could not be loaded: " + (e ? e : "unknown error");
      }
    });
    return handle == nullptr ? nullptr : dlsym(handle, name);
  }
};

Library& cublas_library() {
  static Library lib{"libcublas.so." WEFT_STR(CUBLAS_VER_MAJOR)};
  return lib;
}

Library& cublaslt_library() {
  static Library lib{"libcublasLt.so." WEFT_STR(CUBLAS_VER_MAJOR)};
  return lib;
}

}  // namespace

// The real function `name` (after cublas_v2.h's renames, e.g. cublasCreate -> cublasCreate_v2),
// resolved once; null when the library or the symbol is missing.
#define WEFT_REAL_AS(library, name, type)                                                     \
  static const auto real = reinterpret_cast<type>(library().symbol(WEFT_STR(name)));         \
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED
#define WEFT_REAL(library, name) WEFT_REAL_AS(library, name, decltype(&name))

extern "C" {

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* lightHandle) {
  WEFT_REAL(cublaslt_library, cublasLtCreate);
  return real(lightHandle);
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t lightHandle) {
  WEFT_REAL(cublaslt_library, cublasLtDestroy);
  return real(lightHandle);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t lightHandle,
                                           cublasLtMatmulDesc_t computeDesc, const void* alpha,
                                           const void* A, cublasLtMatrixLayout_t Adesc,
                                           const void* B, cublasLtMatrixLayout_t Bdesc,
                                           const void* beta, const void* C,
                                           cublasLtMatrixLayout_t Cdesc, void* D,
                                           cublasLtMatrixLayout_t Ddesc,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace,
                                           size_t workspaceSizeInBytes, cudaStream_t stream) {
  WEFT_REAL(cublaslt_library, cublasLtMatmul);
  return real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
              workspace, workspaceSizeInBytes, stream);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
    cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
    cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
  WEFT_REAL(cublaslt_library, cublasLtMatmulAlgoGetHeuristic);
  return real(lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference,
              requestedAlgoCount, heuristicResultsArray, returnAlgoCount);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
                                                     cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType) {
  WEFT_REAL(cublaslt_library, cublasLtMatmulDescCreate);
  return real(matmulDesc, computeType, scaleType);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  WEFT_REAL(cublaslt_library, cublasLtMatmulDescDestroy);
  return real(matmulDesc);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t sizeInBytes) {
  WEFT_REAL(cublaslt_library, cublasLtMatmulDescSetAttribute);
  return real(matmulDesc, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  WEFT_REAL(cublaslt_library, cublasLtMatmulPreferenceCreate);
  return real(pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  WEFT_REAL(cublaslt_library, cublasLtMatmulPreferenceDestroy);
  return real(pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
    size_t sizeInBytes) {
  WEFT_REAL(cublaslt_library, cublasLtMatmulPreferenceSetAttribute);
  return real(pref, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout,
                                                       cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  WEFT_REAL(cublaslt_library, cublasLtMatrixLayoutCreate);
  return real(matLayout, type, rows, cols, ld);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  WEFT_REAL(cublaslt_library, cublasLtMatrixLayoutDestroy);
  return real(matLayout);
}

// cublas_v2.h renames these four to their _v2 symbols; so do the definitions here.
cublasStatus_t CUBLASWINAPI cublasCreate(cublasHandle_t* handle) {
  WEFT_REAL(cublas_library, cublasCreate);
  return real(handle);
}

cublasStatus_t CUBLASWINAPI cublasDestroy(cublasHandle_t handle) {
  WEFT_REAL(cublas_library, cublasDestroy);
  return real(handle);
}

cublasStatus_t CUBLASWINAPI cublasSetStream(cublasHandle_t handle, cudaStream_t streamId) {
  WEFT_REAL(cublas_library, cublasSetStream);
  return real(handle, streamId);
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace(cublasHandle_t handle, void* workspace,
                                               size_t workspaceSizeInBytes) {
  WEFT_REAL(cublas_library, cublasSetWorkspace);
  return real(handle, workspace, workspaceSizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  WEFT_REAL(cublas_library, cublasSetMathMode);
  return real(handle, mode);
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const void* alpha, const void* A, cudaDataType Atype,
                                         int lda, const void* B, cudaDataType Btype, int ldb,
                                         const void* beta, void* C, cudaDataType Ctype, int ldc,
                                         cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  // The C++ header also declares an overload (with 64-bit sizes), so name the C one's type.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
  WEFT_REAL_AS(cublas_library, cublasGemmEx, GemmEx);
  return real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
              ldc, computeType, algo);
}

const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  static const auto real = reinterpret_cast<decltype(&cublasGetStatusName)>(
      cublas_library().symbol("cublasGetStatusName"));
  return real != nullptr ? real(status) : "CUBLAS_STATUS_NOT_INITIALIZED";
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static const auto real = reinterpret_cast<decltype(&cublasGetStatusString)>(
      cublas_library().symbol("cublasGetStatusString"));
  if (real != nullptr) return real(status);
  return cublas_library().error.empty() ? "cuBLAS is not available"
                                        : cublas_library().error.c_str();
}

}  // extern "C"
