// The engine a subcommand runs, whichever way the process was started: a single process
// (LocalEngine), or one rank of an MPI job started by mpirun / srun (DistributedEngine; rank 0
// coordinates, the other ranks serve steps). Subcommands write their logic once against it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/local_engine.h"
#include "launcher/cli_args.h"
#ifdef WEFT_HAVE_MPI
#include "engine/distributed_engine.h"
#include "parallel/mpi_world.h"
#endif

namespace weft {

class EngineSession {
 public:
  // Reads --tp / --pp / --layers-per-stage / --step-timeout and the shared engine flags; starts
  // MPI when the process was launched by mpirun or srun, or when tp * pp > 1. The defaults are
  // engine_options_from's.
  static absl::StatusOr<std::unique_ptr<EngineSession>> start(
      const CliArgs& args, const std::string& default_model = "",
      std::chrono::microseconds default_spin = ThreadPool::kDefaultSpin);
  ~EngineSession();

  int rank() const;
  bool is_coordinator() const { return rank() == 0; }
  const LocalEngineOptions& options() const { return options_; }

  // Before load(): this rank's forward passes record attention weights into `probe`.
  void set_attention_probe(std::shared_ptr<AttentionProbe> probe);
  // Loads the model (collective in a job). `detokenizers` matters on the coordinator only.
  absl::Status load(DetokenizerFactory detokenizers);

  // Coordinator only.
  Engine& engine();
  const RankModel& model() const;
  int64_t num_kv_blocks() const;

  // Non-coordinators: serve steps until the coordinator finishes.
  absl::Status serve();
  // Coordinator: end the job's step loops (idempotent).
  absl::Status finish();
  // Collective (every rank, after the step loops ended): each rank's seconds spent computing
  // steps, in rank order, on the coordinator (empty elsewhere; {} in a single process).
  absl::StatusOr<std::vector<double>> gather_compute_seconds();
  // Collective (every rank, after the step loops ended): every rank's `mine`, in rank order, on
  // the coordinator (empty elsewhere; {mine} in a single process).
  absl::StatusOr<std::vector<std::string>> gather_to_coordinator(const std::string& mine);
  int world_size() const;
  // Ends the whole job at once with a message (a rank that cannot go on must not leave the
  // others waiting). In a single process: prints the message and returns.
  void abort(int code, const std::string& message);

 private:
  absl::Status create_engine(DetokenizerFactory detokenizers);
  EngineSession() = default;
  LocalEngineOptions options_;
  std::unique_ptr<LocalEngine> local_;
#ifdef WEFT_HAVE_MPI
  DistributedOptions distributed_;
  std::unique_ptr<MpiWorld> world_;
  std::unique_ptr<DistributedEngine> distributed_engine_;
#endif
};

// Runs `coordinator` on rank 0 and the step loop on the other ranks; errors on any rank end the
// whole job. Returns the process exit code.
int run_session(EngineSession& session, const std::function<int()>& coordinator);

}  // namespace weft
