// gtest main for tests run under mpirun: every rank runs every test (collectives need all of
// them); rank 0 prints the usual report, other ranks print only their failures, prefixed with
// their rank. The exit code is non-zero on every rank if any rank failed.
#include <cstdio>
#include <memory>

#include <gtest/gtest.h>

#include "parallel/mpi_world.h"
#include "tests/mpi/mpi_test_env.h"

namespace weft {
namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace

MpiWorld* g_world = nullptr;

}  // namespace weft

int main(int argc, char** argv) {
  absl::StatusOr<std::unique_ptr<weft::MpiWorld>> world = weft::MpiWorld::init(&argc, &argv);
  if (!world.ok()) {
    std::fprintf(stderr, "MPI init failed: %s\n", std::string(world.status().message()).c_str());
    return 2;
  }
  weft::g_world = world->get();
  ::testing::InitGoogleTest(&argc, argv);
  if ((*world)->rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new weft::RankFailurePrinter((*world)->rank()));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = failed;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_failed && (*world)->rank() == 0 && !failed) {
    std::fprintf(stderr, "rank 0 passed, but another rank failed (see [rank N] lines)\n");
  }
  weft::g_world = nullptr;
  world->reset();
  return any_failed;
}
