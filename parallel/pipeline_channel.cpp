#include "parallel/pipeline_channel.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "parallel/mpi_communicator.h"

namespace weft {
namespace {

constexpr int kControlTag = 101;
constexpr int kHiddenTag = 102;
constexpr int kResultTag = 103;
// One message carries at most this many bytes (MPI counts are ints).
constexpr size_t kMaxPiece = size_t{1} << 30;
// A control message or result larger than this is a protocol error, not a real step.
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 34;

absl::Status check(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(what, " failed: ", mpi_error_string(rc)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PipelineChannel>> PipelineChannel::create(const WorldConfig& config) {
  std::unique_ptr<PipelineChannel> channel(new PipelineChannel(config));
  if (absl::Status s = check(MPI_Comm_dup(MPI_COMM_WORLD, &channel->comm_), "MPI_Comm_dup"); !s.ok()) {
    return s;
  }
  MPI_Comm_set_errhandler(channel->comm_, MPI_ERRORS_RETURN);
  return channel;
}

PipelineChannel::~PipelineChannel() {
  (void)reap_results(/*wait_all=*/true);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

absl::Status PipelineChannel::send_bytes(const std::string& bytes, int dest, int tag) {
  uint64_t size = bytes.size();
  absl::Status s = check(MPI_Send(&size, 1, MPI_UINT64_T, dest, tag, comm_),
                         absl::StrCat("pipeline send of a size to rank ", dest));
  for (size_t off = 0; s.ok() && off < bytes.size(); off += kMaxPiece) {
    const int n = static_cast<int>(std::min(kMaxPiece, bytes.size() - off));
    s = check(MPI_Send(bytes.data() + off, n, MPI_BYTE, dest, tag, comm_),
              absl::StrCat("pipeline send of ", n, " bytes to rank ", dest));
  }
  return s;
}

absl::StatusOr<std::string> PipelineChannel::recv_bytes(int src, int tag) {
  uint64_t size = 0;
  absl::Status s = check(MPI_Recv(&size, 1, MPI_UINT64_T, src, tag, comm_, MPI_STATUS_IGNORE),
                         absl::StrCat("pipeline receive of a size from rank ", src));
  if (!s.ok()) return s;
  if (size > kMaxMessageBytes) {
    return absl::DataLossError(absl::StrCat("rank ", src, " announced a pipeline message of ", size,
                                            " bytes (limit ", kMaxMessageBytes, ")"));
  }
  std::string bytes(size, '\0');
  for (size_t off = 0; off < size; off += kMaxPiece) {
    const int n = static_cast<int>(std::min<uint64_t>(kMaxPiece, size - off));
    s = check(MPI_Recv(bytes.data() + off, n, MPI_BYTE, src, tag, comm_, MPI_STATUS_IGNORE),
              absl::StrCat("pipeline receive of ", n, " bytes from rank ", src));
    if (!s.ok()) return s;
  }
  return bytes;
}

absl::Status PipelineChannel::send_control(const std::string& bytes) {
  return send_bytes(bytes, config_.rank_of(config_.pp_rank() + 1, config_.tp_rank()), kControlTag);
}

absl::StatusOr<std::string> PipelineChannel::recv_control() {
  return recv_bytes(config_.rank_of(config_.pp_rank() - 1, config_.tp_rank()), kControlTag);
}

absl::Status PipelineChannel::send_hidden(const TensorView& hidden) {
  const int dest = config_.rank_of(config_.pp_rank() + 1, config_.tp_rank());
  const char* data = static_cast<const char*>(hidden.data);
  for (size_t off = 0; off < hidden.nbytes(); off += kMaxPiece) {
    const int n = static_cast<int>(std::min(kMaxPiece, hidden.nbytes() - off));
    absl::Status s = check(MPI_Send(data + off, n, MPI_BYTE, dest, kHiddenTag, comm_),
                           absl::StrCat("sending hidden states to rank ", dest));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status PipelineChannel::recv_hidden(const TensorView& hidden) {
  const int src = config_.rank_of(config_.pp_rank() - 1, config_.tp_rank());
  char* data = static_cast<char*>(hidden.data);
  for (size_t off = 0; off < hidden.nbytes(); off += kMaxPiece) {
    const int n = static_cast<int>(std::min(kMaxPiece, hidden.nbytes() - off));
    absl::Status s = check(MPI_Recv(data + off, n, MPI_BYTE, src, kHiddenTag, comm_, MPI_STATUS_IGNORE),
                           absl::StrCat("receiving hidden states from rank ", src));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status PipelineChannel::post_result(std::string bytes) {
  if (bytes.size() > INT_MAX) return absl::InvalidArgumentError("step result over 2 GiB");
  if (absl::Status s = reap_results(/*wait_all=*/false); !s.ok()) return s;
  pending_.emplace_back();
  PendingResult& p = pending_.back();
  p.size = std::make_unique<uint64_t>(bytes.size());
  p.bytes = std::move(bytes);
  absl::Status s = check(MPI_Isend(p.size.get(), 1, MPI_UINT64_T, 0, kResultTag, comm_, &p.requests[0]),
                         "posting a step result to rank 0");
  if (!s.ok()) return s;
  return check(MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, 0, kResultTag,
                         comm_, &p.requests[1]),
               "posting a step result to rank 0");
}

absl::StatusOr<std::string> PipelineChannel::recv_result() {
  return recv_bytes(config_.rank_of(config_.pp - 1, 0), kResultTag);
}

absl::Status PipelineChannel::reap_results(bool wait_all) {
  while (!pending_.empty()) {
    PendingResult& p = pending_.front();
    int done = 0;
    if (wait_all) {
      absl::Status s = check(MPI_Waitall(2, p.requests, MPI_STATUSES_IGNORE), "delivering a step result");
      if (!s.ok()) return s;
      done = 1;
    } else {
      absl::Status s = check(MPI_Testall(2, p.requests, &done, MPI_STATUSES_IGNORE), "delivering a step result");
      if (!s.ok()) return s;
    }
    if (!done) break;
    pending_.pop_front();
  }
  return absl::OkStatus();
}

absl::Status PipelineChannel::flush_results() { return reap_results(/*wait_all=*/true); }

}  // namespace weft
