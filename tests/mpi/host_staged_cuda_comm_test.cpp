// HostStagedCommunicator with CudaDeviceStaging on a real GPU (labels gpu and mpi; built with
// WEFT_CUDA): every rank on device 0, which NCCL would refuse, with the results checked after
// copying back. Skips without a GPU. Expected values come from the rank numbers alone.
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "core/half.h"
#include "parallel/cuda_device_staging.h"
#include "parallel/host_staged_communicator.h"
#include "parallel/mpi_communicator.h"
#include "tests/mpi/mpi_test_env.h"

namespace weft {
namespace {

class HostStagedCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU visible";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
    absl::StatusOr<std::unique_ptr<MpiCommunicator>> host = MpiCommunicator::duplicate(MPI_COMM_WORLD);
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = *std::move(host);
    staging_ = std::make_unique<CudaDeviceStaging>(stream_);
    comm_ = std::make_unique<HostStagedCommunicator>(*host_, *staging_);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  // Device memory holding `values`, freed at the end of the test.
  template <typename T>
  T* device_copy(const std::vector<T>& values) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, values.size() * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    buffers_.emplace_back(p, [](void* q) { cudaFree(q); });
    return static_cast<T*>(p);
  }
  template <typename T>
  std::vector<T> host_copy(const T* device, size_t n) {
    std::vector<T> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

  cudaStream_t stream_ = nullptr;
  std::unique_ptr<MpiCommunicator> host_;
  std::unique_ptr<CudaDeviceStaging> staging_;
  std::unique_ptr<HostStagedCommunicator> comm_;
  std::vector<std::unique_ptr<void, void (*)(void*)>> buffers_;
};

TEST_F(HostStagedCudaTest, Bf16AllReduceSumOnOneSharedGpu) {
  const int size = comm_->size(), rank = comm_->rank();
  const int64_t n = 4096;
  std::vector<uint16_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = float_to_bf16(float(rank + 1) * float(i % 5));
  uint16_t* d = device_copy(values);
  ASSERT_TRUE(comm_->all_reduce_sum(TensorView{d, DType::kBF16, Shape{n}, Device::kCuda}).ok());
  const std::vector<uint16_t> out = host_copy(d, n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(bf16_to_float(out[i]), float(size * (size + 1) / 2) * float(i % 5)) << i;
  }
}

TEST_F(HostStagedCudaTest, AllGatherAndBroadcastOnOneSharedGpu) {
  const int size = comm_->size(), rank = comm_->rank();
  const int64_t n = 257;
  std::vector<float> mine(n);
  for (int64_t i = 0; i < n; ++i) mine[i] = float(rank * 1000 + i);
  float* in = device_copy(mine);
  float* out = device_copy(std::vector<float>(size * n, -1.0f));
  ASSERT_TRUE(comm_->all_gather(TensorView{in, DType::kF32, Shape{n}, Device::kCuda},
                                TensorView{out, DType::kF32, Shape{size, n}, Device::kCuda})
                  .ok());
  const std::vector<float> gathered = host_copy(out, size * n);
  for (int r = 0; r < size; ++r) {
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(gathered[r * n + i], float(r * 1000 + i)) << r << "," << i;
  }
  ASSERT_TRUE(comm_->broadcast(TensorView{in, DType::kF32, Shape{n}, Device::kCuda}, size - 1).ok());
  const std::vector<float> root = host_copy(in, n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(root[i], float((size - 1) * 1000 + i)) << i;
}

}  // namespace
}  // namespace weft
