// kernels/cuda/cublas_lazy.cpp: weft does not link cuBLAS; its entry points load the toolkit's
// libraries on first use. This runs on machines without a GPU (loading a library needs none).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace {

// Whether a shared object whose path contains `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(name) != std::string::npos) return true;
  }
  return false;
}

TEST(CublasLazyTest, LibrariesLoadOnFirstCallNotAtStartUp) {
  // Nothing has called cuBLAS yet: its libraries must not be in the process (they cost ~140 MB
  // of resident memory when linked).
  EXPECT_FALSE(mapped("libcublasLt.so"));
  EXPECT_FALSE(mapped("libcublas.so"));
  // The real cublasGetStatusName names the status; the fallback for a library that failed to
  // load would answer CUBLAS_STATUS_NOT_INITIALIZED whatever the status.
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS")
      << cublasGetStatusString(CUBLAS_STATUS_SUCCESS);
  EXPECT_TRUE(mapped("libcublas.so"));
  // cuBLASLt resolves too: without a GPU the call fails inside the real library, with a status
  // of its own (the fallback's NOT_INITIALIZED would also be possible there, so only check that
  // the library was loaded to answer).
  cublasLtHandle_t handle = nullptr;
  const cublasStatus_t status = cublasLtCreate(&handle);
  EXPECT_TRUE(mapped("libcublasLt.so"));
  if (status == CUBLAS_STATUS_SUCCESS) cublasLtDestroy(handle);
}

}  // namespace
