// HostStagedCommunicator over a real MpiCommunicator, under mpirun -np 2 and -np 4 (and as a
// singleton, where multi-rank cases skip). The "device" here is host memory that the tensors label
// Device::kCuda, moved by DeviceStaging copies that count themselves: the staging logic, the F32
// reduction of 16-bit floats and every collective run for real over MPI, and MpiCommunicator
// refuses any device-labelled tensor that would reach it unstaged. The CUDA copies themselves
// (CudaDeviceStaging) are two cudaMemcpyAsync calls, exercised by the gpu-labelled test.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/half.h"
#include "parallel/host_staged_communicator.h"
#include "parallel/mpi_communicator.h"
#include "tests/mpi/mpi_test_env.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

#define REQUIRE_RANKS(n) \
  if (g_world->size() < (n)) GTEST_SKIP() << "needs at least " << (n) << " ranks"

// Plain memcpy standing in for the device copies, counting them.
class CountingStaging final : public DeviceStaging {
 public:
  absl::Status to_host(const void* device, void* host, size_t bytes) override {
    ++to_host_calls;
    std::memcpy(host, device, bytes);
    return absl::OkStatus();
  }
  absl::Status to_device(const void* host, void* device, size_t bytes) override {
    ++to_device_calls;
    std::memcpy(device, host, bytes);
    return absl::OkStatus();
  }
  int to_host_calls = 0;
  int to_device_calls = 0;
};

// A tensor's memory seen as device memory.
TensorView on_device(const Tensor& t) {
  TensorView v = t.view();
  v.device = Device::kCuda;
  return v;
}

struct Fixture {
  std::unique_ptr<MpiCommunicator> host;
  CountingStaging staging;
  std::unique_ptr<HostStagedCommunicator> comm;
};

std::unique_ptr<Fixture> make_fixture() {
  auto f = std::make_unique<Fixture>();
  absl::StatusOr<std::unique_ptr<MpiCommunicator>> c = MpiCommunicator::duplicate(MPI_COMM_WORLD);
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return nullptr;
  f->host = *std::move(c);
  f->comm = std::make_unique<HostStagedCommunicator>(*f->host, f->staging);
  return f;
}

TEST(HostStagedCommunicator, AllReduceSumOfADeviceTensorCopiesOnceEachWay) {
  auto f = make_fixture();
  ASSERT_NE(f, nullptr);
  const int size = f->comm->size();
  EXPECT_EQ(f->comm->rank(), g_world->rank());
  const int64_t n = 1000;
  Tensor t = Tensor::empty(DType::kF32, Shape{n});
  for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = float((f->comm->rank() + 1) * (i % 7 + 1));
  ASSERT_TRUE(f->comm->all_reduce_sum(on_device(t)).ok());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(t.data_as<float>()[i], float((i % 7 + 1) * size * (size + 1) / 2)) << i;
  EXPECT_EQ(f->staging.to_host_calls, 1);
  EXPECT_EQ(f->staging.to_device_calls, 1);
}

// Rank r holds 1 + r * 2^-5 + i * 2^-7 (exact in BF16 and F16 for r, i < 4): the F32 sum is exact,
// and the result is that sum rounded once, the same bits on every rank.
void check_half_reduction(DType dtype) {
  auto f = make_fixture();
  ASSERT_NE(f, nullptr);
  const int size = f->comm->size();
  const int rank = f->comm->rank();
  const int64_t n = 4;
  const auto narrow = [dtype](float v) { return dtype == DType::kBF16 ? float_to_bf16(v) : float_to_f16(v); };
  const auto widen = [dtype](uint16_t b) { return dtype == DType::kBF16 ? bf16_to_float(b) : f16_to_float(b); };
  Tensor sum = Tensor::empty(dtype, Shape{n});
  Tensor max = Tensor::empty(dtype, Shape{n});
  for (int64_t i = 0; i < n; ++i) {
    const float v = 1.0f + rank * 0x1p-5f + i * 0x1p-7f;
    ASSERT_EQ(widen(narrow(v)), v) << "the test's inputs must be exact in " << dtype_name(dtype);
    sum.data_as<uint16_t>()[i] = narrow(v);
    max.data_as<uint16_t>()[i] = narrow(-v);
  }
  ASSERT_TRUE(f->comm->all_reduce_sum(on_device(sum)).ok());
  ASSERT_TRUE(f->comm->all_reduce_max(on_device(max)).ok());
  for (int64_t i = 0; i < n; ++i) {
    float exact = 0;
    for (int r = 0; r < size; ++r) exact += 1.0f + r * 0x1p-5f + i * 0x1p-7f;
    EXPECT_EQ(sum.data_as<uint16_t>()[i], narrow(exact)) << dtype_name(dtype) << " element " << i;
    EXPECT_EQ(widen(max.data_as<uint16_t>()[i]), -(1.0f + i * 0x1p-7f)) << i;  // rank 0's is the largest
  }
  // Host 16-bit tensors reduce the same way, with nothing staged.
  Tensor host = Tensor::empty(dtype, Shape{1});
  host.data_as<uint16_t>()[0] = narrow(1.0f + rank * 0x1p-7f);
  const int copies = f->staging.to_host_calls;
  ASSERT_TRUE(f->comm->all_reduce_sum(host).ok());
  float exact = 0;
  for (int r = 0; r < size; ++r) exact += 1.0f + r * 0x1p-7f;
  EXPECT_EQ(host.data_as<uint16_t>()[0], narrow(exact));
  EXPECT_EQ(f->staging.to_host_calls, copies);
}

TEST(HostStagedCommunicator, Bf16ReducesInF32RoundedOnce) { check_half_reduction(DType::kBF16); }
TEST(HostStagedCommunicator, F16ReducesInF32RoundedOnce) { check_half_reduction(DType::kF16); }

TEST(HostStagedCommunicator, AllGatherOfDeviceTensorsAlsoInPlace) {
  auto f = make_fixture();
  ASSERT_NE(f, nullptr);
  const int size = f->comm->size();
  const int rank = f->comm->rank();
  const int n = 37;
  for (bool in_place : {false, true}) {
    Tensor out = Tensor::zeros(DType::kU8, Shape{size, n});
    Tensor mine = Tensor::empty(DType::kU8, Shape{n});
    TensorView in = in_place ? out.view().rows(rank, 1).reshaped(Shape{n}) : mine.view();
    for (int i = 0; i < n; ++i) in.as<uint8_t>()[i] = uint8_t(rank * 50 + i);
    in.device = Device::kCuda;
    ASSERT_TRUE(f->comm->all_gather(in, on_device(out)).ok());
    for (int r = 0; r < size; ++r) {
      for (int i = 0; i < n; ++i) ASSERT_EQ(out.data_as<uint8_t>()[r * n + i], uint8_t(r * 50 + i)) << r << "," << i;
    }
  }
}

TEST(HostStagedCommunicator, AllGatherRefusesMixedSidesAndWrongSizes) {
  auto f = make_fixture();
  ASSERT_NE(f, nullptr);
  Tensor in = Tensor::zeros(DType::kF32, Shape{3});
  Tensor out = Tensor::zeros(DType::kF32, Shape{f->comm->size(), 3});
  absl::Status mixed = f->comm->all_gather(on_device(in), out);
  EXPECT_EQ(mixed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mixed.message()), HasSubstr("must both be device tensors or both host tensors"));
  Tensor small = Tensor::zeros(DType::kF32, Shape{f->comm->size(), 2});
  absl::Status wrong = f->comm->all_gather(on_device(in), on_device(small));
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong.message()), HasSubstr("are needed"));
  EXPECT_EQ(f->staging.to_host_calls, 0);
}

TEST(HostStagedCommunicator, BroadcastFromEveryRootCopiesOnlyWhatMoves) {
  auto f = make_fixture();
  ASSERT_NE(f, nullptr);
  for (int root = 0; root < f->comm->size(); ++root) {
    Tensor t = Tensor::zeros(DType::kI64, Shape{10, 10});
    if (f->comm->rank() == root) {
      for (int i = 0; i < 100; ++i) t.data_as<int64_t>()[i] = root * 1000000007LL + i;
    }
    const int to_host = f->staging.to_host_calls, to_device = f->staging.to_device_calls;
    ASSERT_TRUE(f->comm->broadcast(on_device(t), root).ok());
    for (int i = 0; i < 100; ++i) ASSERT_EQ(t.data_as<int64_t>()[i], root * 1000000007LL + i) << root << "," << i;
    // The root only reads its tensor; the others only write theirs.
    const bool is_root = f->comm->rank() == root;
    EXPECT_EQ(f->staging.to_host_calls - to_host, is_root ? 1 : 0);
    EXPECT_EQ(f->staging.to_device_calls - to_device, is_root ? 0 : 1);
  }
}

// Pairs (0,1), (2,3), ...: a device tensor one way, a host tensor the other.
TEST(HostStagedCommunicator, SendRecvDeviceAndHostTensors) {
  REQUIRE_RANKS(2);
  auto f = make_fixture();
  ASSERT_NE(f, nullptr);
  const int r = f->comm->rank();
  const int peer = r ^ 1;
  if (peer >= f->comm->size()) return;
  const int n = 513;
  Tensor out = Tensor::empty(DType::kF32, Shape{n});
  Tensor in = Tensor::zeros(DType::kF32, Shape{n});
  Tensor host_out = Tensor::empty(DType::kI32, Shape{2});
  Tensor host_in = Tensor::zeros(DType::kI32, Shape{2});
  for (int i = 0; i < n; ++i) out.data_as<float>()[i] = float(r * 10000 + i);
  host_out.data_as<int32_t>()[0] = r;
  host_out.data_as<int32_t>()[1] = -r;
  if (r % 2 == 0) {
    ASSERT_TRUE(f->comm->send(on_device(out), peer).ok());
    ASSERT_TRUE(f->comm->recv(host_in, peer).ok());
  } else {
    ASSERT_TRUE(f->comm->recv(on_device(in), peer).ok());
    ASSERT_TRUE(f->comm->send(host_out, peer).ok());
  }
  if (r % 2 == 0) {
    EXPECT_EQ(host_in.data_as<int32_t>()[0], peer);
    EXPECT_EQ(host_in.data_as<int32_t>()[1], -peer);
    EXPECT_EQ(f->staging.to_host_calls, 1);
    EXPECT_EQ(f->staging.to_device_calls, 0);
  } else {
    for (int i = 0; i < n; ++i) ASSERT_EQ(in.data_as<float>()[i], float(peer * 10000 + i));
    EXPECT_EQ(f->staging.to_host_calls, 0);
    EXPECT_EQ(f->staging.to_device_calls, 1);
  }
}

// A failing copy is the call's error, and nothing is sent.
class FailingStaging final : public DeviceStaging {
 public:
  absl::Status to_host(const void*, void*, size_t) override { return absl::InternalError("copy failed: test"); }
  absl::Status to_device(const void*, void*, size_t) override { return absl::InternalError("copy failed: test"); }
};

TEST(HostStagedCommunicator, ACopyFailureIsTheCallsError) {
  auto f = make_fixture();
  ASSERT_NE(f, nullptr);
  FailingStaging failing;
  HostStagedCommunicator comm(*f->host, failing);
  Tensor t = Tensor::zeros(DType::kF32, Shape{4});
  // Every rank fails before reaching MPI, so no rank waits in the collective.
  absl::Status s = comm.all_reduce_sum(on_device(t));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()), HasSubstr("copy failed"));
}

}  // namespace
}  // namespace weft
