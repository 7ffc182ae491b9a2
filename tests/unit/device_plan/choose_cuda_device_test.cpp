// Which GPU a rank uses under --device cuda (engine/cuda/cuda_device_executor.h): plain host
// logic over the launcher's environment, checked without a GPU.
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/cuda/cuda_device_executor.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

// Clears the local-rank variables for the test, restoring nothing: each test sets what it needs.
void clear_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "LOCAL_RANK"}) {
    unsetenv(name);
  }
}

TEST(ChooseCudaDevice, TheRequestedGpuWins) {
  clear_local_rank();
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  EXPECT_EQ(*choose_cuda_device(2, 4), 2);
  auto past = choose_cuda_device(4, 4);
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(past.status().message()), HasSubstr("--cuda-device 4"));
  clear_local_rank();
}

TEST(ChooseCudaDevice, TheLocalRankModuloTheGpus) {
  clear_local_rank();
  EXPECT_EQ(*choose_cuda_device(-1, 4), 0);  // a single process
  setenv("SLURM_LOCALID", "5", 1);
  EXPECT_EQ(*choose_cuda_device(-1, 4), 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);  // OpenMPI's first
  EXPECT_EQ(*choose_cuda_device(-1, 4), 2);
  clear_local_rank();
  setenv("LOCAL_RANK", "3", 1);  // as cluster/bind-gpu.sh, which leaves one GPU visible
  EXPECT_EQ(*choose_cuda_device(-1, 1), 0);
  clear_local_rank();
}

TEST(ChooseCudaDevice, NoGpuIsNamed) {
  auto none = choose_cuda_device(-1, 0);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("no CUDA GPU is visible"));
}

}  // namespace
}  // namespace weft
