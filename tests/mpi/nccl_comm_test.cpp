// NcclCommunicator on GPUs (labels gpu and mpi; built with WEFT_CUDA). One GPU per rank: device
// = rank % device count; with fewer GPUs than ranks every test skips (NCCL refuses two ranks
// on one device). Expected values are computed on the host from the rank numbers alone.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "parallel/mpi_communicator.h"
#include "parallel/mpi_world.h"
#include "parallel/nccl_communicator.h"
#include "tests/mpi/mpi_test_env.h"

namespace weft {
namespace {

// A device buffer holding `host` (copied in); copy back with to_host().
class DeviceBuffer {
 public:
  DeviceBuffer(const void* host, size_t bytes) : bytes_(bytes) {
    EXPECT_EQ(cudaMalloc(&ptr_, bytes ? bytes : 1), cudaSuccess);
    if (bytes) {
      EXPECT_EQ(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  TensorView view(DType dtype, Shape shape) const { return {ptr_, dtype, shape, Device::kCuda}; }
  void to_host(void* host) const {
    EXPECT_EQ(cudaMemcpy(host, ptr_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

class NcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    if (devices < g_world->size()) {
      GTEST_SKIP() << "needs one GPU per rank (" << devices << " for " << g_world->size() << ")";
    }
    absl::StatusOr<std::unique_ptr<MpiCommunicator>> host =
        MpiCommunicator::duplicate(MPI_COMM_WORLD);
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = *std::move(host);
    absl::StatusOr<std::unique_ptr<NcclCommunicator>> nccl =
        NcclCommunicator::create(*host_, g_world->rank() % devices);
    ASSERT_TRUE(nccl.ok()) << nccl.status();
    nccl_ = *std::move(nccl);
  }
  std::unique_ptr<MpiCommunicator> host_;
  std::unique_ptr<NcclCommunicator> nccl_;
};

TEST_F(NcclTest, AllReduceSumAndMax) {
  const int n = 1000;
  const int size = nccl_->size();
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = float((nccl_->rank() + 1) * (i % 7 + 1));
  DeviceBuffer sum(v.data(), n * 4);
  DeviceBuffer max(v.data(), n * 4);
  ASSERT_TRUE(nccl_->all_reduce_sum(sum.view(DType::kF32, Shape{n})).ok());
  ASSERT_TRUE(nccl_->all_reduce_max(max.view(DType::kF32, Shape{n})).ok());
  std::vector<float> got_sum(n), got_max(n);
  sum.to_host(got_sum.data());
  max.to_host(got_max.data());
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(got_sum[i], float((i % 7 + 1) * size * (size + 1) / 2)) << i;
    ASSERT_EQ(got_max[i], float((i % 7 + 1) * size)) << i;
  }
}

TEST_F(NcclTest, AllGatherAndBroadcast) {
  const int n = 37;
  const int size = nccl_->size();
  std::vector<uint8_t> mine(n);
  for (int i = 0; i < n; ++i) mine[i] = uint8_t(nccl_->rank() * 50 + i);
  DeviceBuffer in(mine.data(), n);
  std::vector<uint8_t> zeros(size * n, 0);
  DeviceBuffer out(zeros.data(), zeros.size());
  ASSERT_TRUE(nccl_->all_gather(in.view(DType::kU8, Shape{n}),
                                out.view(DType::kU8, Shape{size, n})).ok());
  std::vector<uint8_t> all(size * n);
  out.to_host(all.data());
  for (int r = 0; r < size; ++r) {
    for (int i = 0; i < n; ++i) ASSERT_EQ(all[r * n + i], uint8_t(r * 50 + i));
  }
  for (int root = 0; root < size; ++root) {
    std::vector<int64_t> v(100, 0);
    if (nccl_->rank() == root) {
      for (int i = 0; i < 100; ++i) v[i] = root * 1000000007LL + i;
    }
    DeviceBuffer b(v.data(), v.size() * 8);
    ASSERT_TRUE(nccl_->broadcast(b.view(DType::kI64, Shape{100}), root).ok());
    b.to_host(v.data());
    for (int i = 0; i < 100; ++i) ASSERT_EQ(v[i], root * 1000000007LL + i);
  }
}

TEST_F(NcclTest, SendRecvPairs) {
  const int r = nccl_->rank();
  const int peer = r ^ 1;
  if (peer >= nccl_->size()) GTEST_SKIP() << "no peer for rank " << r;
  const int n = 513;
  std::vector<float> mine(n), theirs(n, 0.0f);
  for (int i = 0; i < n; ++i) mine[i] = float(r * 10000 + i);
  DeviceBuffer out(mine.data(), n * 4);
  DeviceBuffer in(theirs.data(), n * 4);
  if (r % 2 == 0) {
    ASSERT_TRUE(nccl_->send(out.view(DType::kF32, Shape{n}), peer).ok());
    ASSERT_TRUE(nccl_->recv(in.view(DType::kF32, Shape{n}), peer).ok());
  } else {
    ASSERT_TRUE(nccl_->recv(in.view(DType::kF32, Shape{n}), peer).ok());
    ASSERT_TRUE(nccl_->send(out.view(DType::kF32, Shape{n}), peer).ok());
  }
  in.to_host(theirs.data());
  for (int i = 0; i < n; ++i) ASSERT_EQ(theirs[i], float(peer * 10000 + i));
}

TEST_F(NcclTest, HostTensorsAreRejected) {
  float x = 0;
  TensorView host{&x, DType::kF32, Shape{1}, Device::kCpu};
  EXPECT_EQ(nccl_->all_reduce_sum(host).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft
