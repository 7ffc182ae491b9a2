// The MPI job this process belongs to: MPI initialization and finalization (RAII), the
// communicators of the tensor x pipeline layout, a control channel for byte messages (step
// plans, step results) and job-wide abort.
//
// Without mpirun the process is an MPI singleton: rank 0 of a world of size 1, no special path.
// MPI_COMM_WORLD and every communicator made here are set to MPI_ERRORS_RETURN, so MPI failures
// come back as statuses (in practice OpenMPI's runtime still tears the job down when a peer
// process dies; see tests/mpi/README.md).
//
// Threading: MPI is initialized with MPI_THREAD_MULTIPLE when available (at least
// MPI_THREAD_FUNNELED is required). Call everything from one thread, except abort(), which the
// step watchdog calls from its own thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "parallel/mpi_communicator.h"
#include "parallel/step_watchdog.h"
#include "parallel/world_config.h"

namespace weft {

// Exit code of a job aborted by the step watchdog.
inline constexpr int kWatchdogExitCode = 86;
// Tags of send_bytes / recv_bytes must lie in [0, kMaxControlTag].
inline constexpr int kMaxControlTag = 30000;

// The communicators of one rank in a tp x pp layout. Destroy before the MpiWorld.
struct GroupComms {
  WorldConfig config;
  // The ranks of this pipeline stage (same pp_rank), group rank = tp_rank, size = tp.
  std::unique_ptr<MpiCommunicator> tp;
  // A private duplicate of the world (group rank = world rank): pipeline send/recv of
  // activations to prev_stage / next_stage.
  std::unique_ptr<MpiCommunicator> stages;
  int prev_stage = -1;  // world rank of (pp_rank - 1, tp_rank); -1 on the first stage
  int next_stage = -1;  // world rank of (pp_rank + 1, tp_rank); -1 on the last stage
};

class MpiWorld {
 public:
  // Initializes MPI (MPI_Init_thread) unless already initialized, in which case the world does
  // not finalize it either. Errors when MPI was already finalized or the thread level provided
  // is below MPI_THREAD_FUNNELED.
  static absl::StatusOr<std::unique_ptr<MpiWorld>> init(int* argc, char*** argv);
  // Frees the control communicator and calls MPI_Finalize (collective: every rank must get here).
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int thread_level() const { return thread_level_; }
  // This rank's host as the MPI library names it (MPI_Get_processor_name).
  const std::string& host() const { return host_; }

  // Collective over the world. Errors when config.rank / world_size disagree with this process.
  absl::StatusOr<GroupComms> split(const WorldConfig& config);

  // Control channel (a private duplicate of the world; world ranks). Messages are a 64-bit size
  // then the payload in pieces of at most max_message_bytes().
  // Collective: after it every rank's `bytes` equals root's.
  absl::Status broadcast_bytes(std::string& bytes, int root);
  // Collective: root gets every rank's `mine` in rank order (its own included); the others get
  // an empty vector.
  absl::StatusOr<std::vector<std::string>> gather_bytes(const std::string& mine, int root);
  // Point to point; messages between a pair with the same tag arrive in order. tag in
  // [0, kMaxControlTag].
  absl::Status send_bytes(std::string_view bytes, int dest, int tag = 0);
  // Receives the next message of `tag` from `src`. Errors if it is larger than `max_bytes`.
  absl::StatusOr<std::string> recv_bytes(int src, int tag = 0,
                                         size_t max_bytes = size_t{1} << 34);
  absl::Status barrier();

  // Prints "weft: rank R on host H: aborting the job (exit code C): <message>" to stderr and calls
  // MPI_Abort on the world: mpirun kills every rank and exits non-zero. Safe from any thread.
  [[noreturn]] void abort(int code, std::string_view message) const;

  // A watchdog whose expiry aborts the job with `exit_code`. It must not outlive this world.
  std::unique_ptr<StepWatchdog> make_watchdog(int exit_code = kWatchdogExitCode) const;

  // Piece size of the control channel (default 1 GiB; tests make it small to exercise pieces).
  void set_max_message_bytes(size_t bytes);
  size_t max_message_bytes() const { return max_message_bytes_; }

 private:
  MpiWorld(bool owns_mpi, int rank, int size, int thread_level);
  absl::Status send_pieces(const char* data, size_t n, int dest, int tag);
  absl::Status recv_pieces(char* data, size_t n, int src, int tag);

  bool owns_mpi_;
  int rank_;
  int size_;
  int thread_level_;
  std::string host_;
  MPI_Comm control_ = MPI_COMM_NULL;
  size_t max_message_bytes_ = kDefaultMaxMpiMessageBytes;
};

}  // namespace weft
