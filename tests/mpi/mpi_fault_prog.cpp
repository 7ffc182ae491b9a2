// A tiny MPI job for the failure tests (fault_test.sh). Every rank writes its pid to
// DIR/rank_<R>.pid, then:
//   kill DIR:     rank 1 sleeps (the test kills it with SIGKILL); the others block in a barrier.
//   watchdog DIR: every rank arms a StepWatchdog for step 7 (1 s; rank 1: 20 s), rank 1 sleeps
//                 past the deadline, the others block in an all-reduce until their watchdog
//                 aborts the job.
// Sleeps are bounded, so nothing outlives the test even if MPI never tears the job down.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include <unistd.h>

#include "parallel/mpi_world.h"

namespace {

void write_pid(const std::string& dir, int rank) {
  const std::string path = dir + "/rank_" + std::to_string(rank) + ".pid";
  {
    std::ofstream out(path + ".tmp");
    out << getpid() << "\n";
  }
  std::rename((path + ".tmp").c_str(), path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<std::unique_ptr<weft::MpiWorld>> world = weft::MpiWorld::init(&argc, &argv);
  if (!world.ok() || argc != 3) {
    std::fprintf(stderr, "usage: mpirun -np 3 mpi_fault_prog kill|watchdog DIR\n");
    return 2;
  }
  weft::MpiWorld& w = **world;
  const std::string mode = argv[1];
  write_pid(argv[2], w.rank());
  if (mode == "kill") {
    if (w.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return 0;
    }
    const int rc = MPI_Barrier(MPI_COMM_WORLD);
    std::fprintf(stderr, "rank %d: barrier returned %d\n", w.rank(), rc);
    return 3;
  }
  if (mode == "watchdog") {
    std::unique_ptr<weft::StepWatchdog> dog = w.make_watchdog();
    dog->arm(7, std::chrono::milliseconds(w.rank() == 1 ? 20000 : 1000));
    if (w.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(30));
    float x = 1.0f;
    const int rc = MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    dog->disarm();
    std::fprintf(stderr, "rank %d: all-reduce returned %d without the watchdog firing\n",
                 w.rank(), rc);
    return 3;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
