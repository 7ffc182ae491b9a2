#include "launcher/engine_session.h"

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "launcher/engine_flags.h"
#include "weft/kernels/cuda_device.h"
#if WEFT_HAVE_CUDA
#include "engine/cuda/cuda_device_executor.h"
#endif

namespace weft {
namespace {

// mpirun (OpenMPI), srun --mpi=pmix and other PMI launchers set one of these in every rank.
bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<EngineSession>> EngineSession::start(const CliArgs& args,
                                                                    const std::string& default_model,
                                                                    std::chrono::microseconds default_spin) {
  std::unique_ptr<EngineSession> s(new EngineSession());
  WEFT_ASSIGN_OR_RETURN(s->options_, engine_options_from(args, default_model, default_spin));
  WEFT_ASSIGN_OR_RETURN(int64_t tp, args.get_int("tp", 1));
  WEFT_ASSIGN_OR_RETURN(int64_t pp, args.get_int("pp", 1));
  if (tp < 1 || pp < 1) return absl::InvalidArgumentError("--tp and --pp must be at least 1");
  WEFT_ASSIGN_OR_RETURN(int64_t ep, args.get_int("ep", 1));
  if (ep < 1 || tp % ep != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ep ", ep, ": must be at least 1 and divide --tp ", tp,
        " (experts are spread over the ranks of a TP group)"));
  }
  const bool distributed = launched_by_mpi() || tp * pp > 1;
  if (s->options_.device == EngineDevice::kCuda) {
#if !WEFT_HAVE_CUDA
    return absl::FailedPreconditionError(
        "--device cuda: this weft was built without CUDA (WEFT_CUDA=OFF); rebuild with "
        "-DWEFT_CUDA=ON or use --device cpu");
#endif
    if (kernels::cuda_device_count() == 0) {
      return absl::FailedPreconditionError(
          "--device cuda: no CUDA GPU is visible to this process; use --device cpu");
    }
  }
#ifdef WEFT_HAVE_MPI
  if (distributed) {
    s->distributed_.engine = s->options_;
    s->distributed_.tp = static_cast<int>(tp);
    s->distributed_.pp = static_cast<int>(pp);
    s->distributed_.ep = static_cast<int>(ep);
    WEFT_ASSIGN_OR_RETURN(s->distributed_.layers_per_stage, args.get_int_list("layers-per-stage"));
    WEFT_ASSIGN_OR_RETURN(int64_t timeout_s, args.get_int("step-timeout", 300));
    s->distributed_.step_deadline = std::chrono::seconds(timeout_s);
    WEFT_ASSIGN_OR_RETURN(int64_t floor_s, args.get_int("step-timeout-floor", 10));
    if (timeout_s < 1 || floor_s < 1) {
      return absl::InvalidArgumentError("--step-timeout and --step-timeout-floor: must be at least 1 second");
    }
    s->distributed_.step_deadline_floor = std::chrono::seconds(floor_s);
    WEFT_ASSIGN_OR_RETURN(int64_t micro_batches, args.get_int("pipeline-micro-batches", 0));
    s->distributed_.micro_batches = static_cast<int>(micro_batches);
#if WEFT_HAVE_CUDA
    s->distributed_.device_stage = make_cuda_stage_runner;
#endif
    WEFT_ASSIGN_OR_RETURN(s->world_, MpiWorld::init(nullptr, nullptr));
    if (s->world_->size() != tp * pp) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the job has ", s->world_->size(), " rank(s) but --tp ", tp, " x --pp ", pp, " = ", tp * pp,
          " are needed; start it with mpirun -np ", tp * pp, " (or srun -n ", tp * pp, ")"));
    }
  }
#else
  if (distributed) {
    return absl::FailedPreconditionError("this weft was built without MPI (WEFT_MPI=OFF): --tp/--pp need it");
  }
#endif
  return s;
}

EngineSession::~EngineSession() {
#ifdef WEFT_HAVE_MPI
  distributed_engine_.reset();  // before MPI_Finalize
#endif
}

int EngineSession::rank() const {
#ifdef WEFT_HAVE_MPI
  if (world_) return world_->rank();
#endif
  return 0;
}

void EngineSession::set_attention_probe(std::shared_ptr<AttentionProbe> probe) {
  options_.attention_probe = probe;
#ifdef WEFT_HAVE_MPI
  distributed_.engine.attention_probe = std::move(probe);
#endif
}

absl::Status EngineSession::load(DetokenizerFactory detokenizers) {
  WEFT_RETURN_IF_ERROR(create_engine(std::move(detokenizers)));
#ifdef WEFT_HAVE_MPI
  // Which host each rank runs on, so that a failure naming a host or a rank names both.
  if (distributed_engine_ && is_coordinator()) std::cerr << distributed_engine_->rank_hosts() << std::flush;
#endif
  return absl::OkStatus();
}

absl::Status EngineSession::create_engine(DetokenizerFactory detokenizers) {
#ifdef WEFT_HAVE_MPI
  if (world_) {
    WEFT_ASSIGN_OR_RETURN(distributed_engine_,
                          DistributedEngine::create(*world_, distributed_, std::move(detokenizers)));
    return absl::OkStatus();
  }
#endif
  DeviceExecutorFactory device_executor;
#if WEFT_HAVE_CUDA
  device_executor = make_cuda_device_executor;
#endif
  WEFT_ASSIGN_OR_RETURN(local_, LocalEngine::create(options_, std::move(detokenizers), device_executor));
  return absl::OkStatus();
}

Engine& EngineSession::engine() {
#ifdef WEFT_HAVE_MPI
  if (distributed_engine_) return distributed_engine_->engine();
#endif
  return local_->engine();
}

const RankModel& EngineSession::model() const {
#ifdef WEFT_HAVE_MPI
  if (distributed_engine_) return distributed_engine_->model();
#endif
  return local_->model();
}

int64_t EngineSession::num_kv_blocks() const {
#ifdef WEFT_HAVE_MPI
  if (distributed_engine_) return distributed_engine_->num_kv_blocks();
#endif
  return local_->num_kv_blocks();
}

absl::Status EngineSession::serve() {
#ifdef WEFT_HAVE_MPI
  if (distributed_engine_) return distributed_engine_->serve();
#endif
  return absl::OkStatus();
}

absl::Status EngineSession::finish() {
#ifdef WEFT_HAVE_MPI
  if (distributed_engine_ && distributed_engine_->is_coordinator()) return distributed_engine_->shutdown();
#endif
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> EngineSession::gather_compute_seconds() {
  std::vector<double> seconds;
#ifdef WEFT_HAVE_MPI
  if (distributed_engine_) {
    WEFT_ASSIGN_OR_RETURN(std::vector<std::string> all,
                          gather_to_coordinator(std::to_string(distributed_engine_->compute_seconds())));
    for (const std::string& s : all) seconds.push_back(std::stod(s));
  }
#endif
  return seconds;
}

absl::StatusOr<std::vector<std::string>> EngineSession::gather_to_coordinator(const std::string& mine) {
#ifdef WEFT_HAVE_MPI
  if (world_) return world_->gather_bytes(mine, 0);
#endif
  return std::vector<std::string>{mine};
}

int EngineSession::world_size() const {
#ifdef WEFT_HAVE_MPI
  if (world_) return world_->size();
#endif
  return 1;
}

void EngineSession::abort(int code, const std::string& message) {
#ifdef WEFT_HAVE_MPI
  if (world_ && world_->size() > 1) world_->abort(code, message);
#endif
  std::cerr << "weft: " << message << "\n";
}

int run_session(EngineSession& session, const std::function<int()>& coordinator) {
  if (!session.is_coordinator()) {
    // Launchers (mpirun, srun, Slurm's job signals) deliver SIGTERM / SIGINT / SIGUSR1 to every
    // rank; only the coordinator acts on them (drain, flush) and then ends the step loops.
    // Should the coordinator die instead, the launcher kills the workers.
    for (int sig : {SIGTERM, SIGINT, SIGUSR1}) std::signal(sig, SIG_IGN);
    absl::Status s = session.serve();
    if (!s.ok()) session.abort(1, absl::StrCat("rank ", session.rank(), ": ", s.message()));
    return s.ok() ? 0 : 1;
  }
  const int code = coordinator();
  absl::Status s = session.finish();
  if (!s.ok()) {
    session.abort(1, absl::StrCat("rank 0: ", s.message()));
    return 1;
  }
  return code;
}

}  // namespace weft
