#include "parallel/mpi_world.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

// gather_bytes rides on point-to-point messages with a tag user code cannot pick.
constexpr int kGatherTag = kMaxControlTag + 1;

absl::Status mpi_failure(int rc, const std::string& what) {
  return absl::InternalError(absl::StrCat(what, " failed: ", mpi_error_string(rc)));
}

absl::Status check_tag(int tag, const char* what) {
  if (tag < 0 || tag > kMaxControlTag) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": tag ", tag, " is outside [0, ", kMaxControlTag, "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MpiWorld>> MpiWorld::init(int* argc, char*** argv) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return absl::FailedPreconditionError("MpiWorld::init: MPI was finalized");
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (initialized) {
    MPI_Query_thread(&provided);
  } else if (int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
             rc != MPI_SUCCESS) {
    return mpi_failure(rc, "MPI_Init_thread");
  }
  const bool owns = !initialized;
  if (provided < MPI_THREAD_FUNNELED) {
    if (owns) MPI_Finalize();
    return absl::FailedPreconditionError(absl::StrCat(
        "MPI provides thread level ", provided, "; MPI_THREAD_FUNNELED (", MPI_THREAD_FUNNELED,
        ") or better is needed"));
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::unique_ptr<MpiWorld> world(new MpiWorld(owns, rank, size, provided));
  char host[MPI_MAX_PROCESSOR_NAME];
  int host_len = 0;
  if (MPI_Get_processor_name(host, &host_len) == MPI_SUCCESS) world->host_.assign(host, host_len);
  if (world->host_.empty()) world->host_ = "?";
  if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &world->control_); rc != MPI_SUCCESS) {
    return mpi_failure(rc, "MPI_Comm_dup (control channel)");
  }
  MPI_Comm_set_errhandler(world->control_, MPI_ERRORS_RETURN);
  return world;
}

MpiWorld::MpiWorld(bool owns_mpi, int rank, int size, int thread_level)
    : owns_mpi_(owns_mpi), rank_(rank), size_(size), thread_level_(thread_level) {}

MpiWorld::~MpiWorld() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (control_ != MPI_COMM_NULL) MPI_Comm_free(&control_);
  if (owns_mpi_) MPI_Finalize();
}

absl::StatusOr<GroupComms> MpiWorld::split(const WorldConfig& config) {
  if (config.world_size != size_ || config.rank != rank_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MpiWorld::split: the layout is for rank ", config.rank, " of ", config.world_size,
        " but this process is rank ", rank_, " of ", size_));
  }
  GroupComms out;
  out.config = config;
  MPI_Comm tp = MPI_COMM_NULL;
  if (int rc = MPI_Comm_split(MPI_COMM_WORLD, config.pp_rank(), config.tp_rank(), &tp);
      rc != MPI_SUCCESS) {
    return mpi_failure(rc, absl::StrCat("MPI_Comm_split (tensor-parallel group of stage ",
                                        config.pp_rank(), ")"));
  }
  absl::StatusOr<std::unique_ptr<MpiCommunicator>> tp_comm =
      MpiCommunicator::create(tp, MpiCommunicator::Ownership::kOwn);
  if (!tp_comm.ok()) {
    MPI_Comm_free(&tp);
    return tp_comm.status();
  }
  out.tp = *std::move(tp_comm);
  absl::StatusOr<std::unique_ptr<MpiCommunicator>> stages =
      MpiCommunicator::duplicate(MPI_COMM_WORLD);
  if (!stages.ok()) return stages.status();
  out.stages = *std::move(stages);
  if (!config.is_first_stage()) {
    out.prev_stage = config.rank_of(config.pp_rank() - 1, config.tp_rank());
  }
  if (!config.is_last_stage()) {
    out.next_stage = config.rank_of(config.pp_rank() + 1, config.tp_rank());
  }
  return out;
}

void MpiWorld::set_max_message_bytes(size_t bytes) {
  max_message_bytes_ = std::clamp<size_t>(bytes, 1, INT32_MAX);
}

absl::Status MpiWorld::send_pieces(const char* data, size_t n, int dest, int tag) {
  for (size_t off = 0; off < n; off += max_message_bytes_) {
    const int len = static_cast<int>(std::min(max_message_bytes_, n - off));
    if (int rc = MPI_Send(data + off, len, MPI_BYTE, dest, tag, control_); rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Send (control message of ", n, " bytes from rank ",
                                          rank_, " to rank ", dest, ", tag ", tag, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status MpiWorld::recv_pieces(char* data, size_t n, int src, int tag) {
  for (size_t off = 0; off < n; off += max_message_bytes_) {
    const int len = static_cast<int>(std::min(max_message_bytes_, n - off));
    MPI_Status status;
    if (int rc = MPI_Recv(data + off, len, MPI_BYTE, src, tag, control_, &status);
        rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Recv (control message of ", n, " bytes on rank ",
                                          rank_, " from rank ", src, ", tag ", tag, ")"));
    }
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (got != len) {
      return absl::DataLossError(absl::StrCat("control message from rank ", src, ", tag ", tag,
                                              ": a piece of ", got, " bytes where ", len,
                                              " were announced"));
    }
  }
  return absl::OkStatus();
}

absl::Status MpiWorld::broadcast_bytes(std::string& bytes, int root) {
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast_bytes: root ", root, " is outside the world of ", size_));
  }
  uint64_t n = rank_ == root ? bytes.size() : 0;
  if (int rc = MPI_Bcast(&n, 1, MPI_UINT64_T, root, control_); rc != MPI_SUCCESS) {
    return mpi_failure(rc, absl::StrCat("MPI_Bcast (broadcast_bytes size from root ", root, ")"));
  }
  if (rank_ != root) bytes.resize(n);
  for (size_t off = 0; off < n; off += max_message_bytes_) {
    const int len = static_cast<int>(std::min<size_t>(max_message_bytes_, n - off));
    if (int rc = MPI_Bcast(bytes.data() + off, len, MPI_BYTE, root, control_);
        rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Bcast (broadcast_bytes of ", n,
                                          " bytes from root ", root, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> MpiWorld::gather_bytes(const std::string& mine,
                                                                int root) {
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("gather_bytes: root ", root, " is outside the world of ", size_));
  }
  std::vector<std::string> out;
  if (rank_ != root) {
    const uint64_t n = mine.size();
    if (int rc = MPI_Send(&n, 1, MPI_UINT64_T, root, kGatherTag, control_); rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Send (gather_bytes size from rank ", rank_,
                                          " to root ", root, ")"));
    }
    if (absl::Status s = send_pieces(mine.data(), mine.size(), root, kGatherTag); !s.ok()) {
      return s;
    }
    return out;
  }
  out.resize(size_);
  out[root] = mine;
  for (int r = 0; r < size_; ++r) {
    if (r == root) continue;
    uint64_t n = 0;
    if (int rc = MPI_Recv(&n, 1, MPI_UINT64_T, r, kGatherTag, control_, MPI_STATUS_IGNORE);
        rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Recv (gather_bytes size from rank ", r, ")"));
    }
    out[r].resize(n);
    if (absl::Status s = recv_pieces(out[r].data(), n, r, kGatherTag); !s.ok()) return s;
  }
  return out;
}

absl::Status MpiWorld::send_bytes(std::string_view bytes, int dest, int tag) {
  if (absl::Status s = check_tag(tag, "send_bytes"); !s.ok()) return s;
  if (dest < 0 || dest >= size_ || dest == rank_) {
    return absl::InvalidArgumentError(absl::StrCat("send_bytes: destination ", dest,
                                                   " is not another rank of the world of ",
                                                   size_));
  }
  const uint64_t n = bytes.size();
  if (int rc = MPI_Send(&n, 1, MPI_UINT64_T, dest, tag, control_); rc != MPI_SUCCESS) {
    return mpi_failure(rc, absl::StrCat("MPI_Send (send_bytes size from rank ", rank_,
                                        " to rank ", dest, ", tag ", tag, ")"));
  }
  return send_pieces(bytes.data(), bytes.size(), dest, tag);
}

absl::StatusOr<std::string> MpiWorld::recv_bytes(int src, int tag, size_t max_bytes) {
  if (absl::Status s = check_tag(tag, "recv_bytes"); !s.ok()) return s;
  if (src < 0 || src >= size_ || src == rank_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "recv_bytes: source ", src, " is not another rank of the world of ", size_));
  }
  uint64_t n = 0;
  if (int rc = MPI_Recv(&n, 1, MPI_UINT64_T, src, tag, control_, MPI_STATUS_IGNORE);
      rc != MPI_SUCCESS) {
    return mpi_failure(rc, absl::StrCat("MPI_Recv (recv_bytes size on rank ", rank_,
                                        " from rank ", src, ", tag ", tag, ")"));
  }
  if (n > max_bytes) {
    // The payload is left unreceived: the pair's channel for this tag is unusable afterwards.
    return absl::ResourceExhaustedError(absl::StrCat("recv_bytes from rank ", src, ", tag ", tag,
                                                     ": message of ", n,
                                                     " bytes exceeds the limit of ", max_bytes));
  }
  std::string out(n, '\0');
  if (absl::Status s = recv_pieces(out.data(), n, src, tag); !s.ok()) return s;
  return out;
}

absl::Status MpiWorld::barrier() {
  if (int rc = MPI_Barrier(control_); rc != MPI_SUCCESS) {
    return mpi_failure(rc, absl::StrCat("MPI_Barrier (world of ", size_, ")"));
  }
  return absl::OkStatus();
}

void MpiWorld::abort(int code, std::string_view message) const {
  std::fprintf(stderr, "weft: rank %d on host %s: aborting the job (exit code %d): %.*s\n", rank_,
               host_.c_str(), code, static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  // MPI_Abort does not return; should an implementation return anyway, still end this process.
  std::_Exit(code);
}

std::unique_ptr<StepWatchdog> MpiWorld::make_watchdog(int exit_code) const {
  return std::make_unique<StepWatchdog>(
      rank_, [this, exit_code](const std::string& message) { abort(exit_code, message); });
}

}  // namespace weft
