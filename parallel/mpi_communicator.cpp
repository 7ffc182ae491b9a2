#include "parallel/mpi_communicator.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

// One tag per communicator is enough: every communicator is a private message space and MPI
// keeps messages between a pair in order.
constexpr int kTensorTag = 7;

absl::Status mpi_failure(int rc, const std::string& what) {
  return absl::InternalError(absl::StrCat(what, " failed: ", mpi_error_string(rc)));
}

absl::Status require_host(const TensorView& t, const char* what) {
  if (t.device != Device::kCpu) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": MpiCommunicator moves host memory only, got a device tensor"));
  }
  if (t.data == nullptr && t.nbytes() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": tensor has no data"));
  }
  return absl::OkStatus();
}

// The MPI type of a reducible dtype, or MPI_DATATYPE_NULL.
MPI_Datatype reduction_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return MPI_FLOAT;
    case DType::kI32: return MPI_INT32_T;
    case DType::kI64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
  }
}

}  // namespace

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) {
    return absl::StrCat("MPI error code ", code);
  }
  return std::string(text, static_cast<size_t>(len));
}

absl::StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create(
    MPI_Comm comm, Ownership ownership, size_t max_message_bytes) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    return absl::FailedPreconditionError("MpiCommunicator: MPI is not initialized");
  }
  if (comm == MPI_COMM_NULL) {
    return absl::InvalidArgumentError("MpiCommunicator: communicator is MPI_COMM_NULL");
  }
  if (max_message_bytes < 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MpiCommunicator: max_message_bytes is ", max_message_bytes, ", expected at least 8"));
  }
  max_message_bytes = std::min<size_t>(max_message_bytes, INT32_MAX);
  if (int rc = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN); rc != MPI_SUCCESS) {
    return mpi_failure(rc, "MPI_Comm_set_errhandler");
  }
  int rank = 0;
  int size = 0;
  if (int rc = MPI_Comm_rank(comm, &rank); rc != MPI_SUCCESS) {
    return mpi_failure(rc, "MPI_Comm_rank");
  }
  if (int rc = MPI_Comm_size(comm, &size); rc != MPI_SUCCESS) {
    return mpi_failure(rc, "MPI_Comm_size");
  }
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(
      comm, ownership == Ownership::kOwn, rank, size, max_message_bytes));
}

absl::StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::duplicate(
    MPI_Comm comm, size_t max_message_bytes) {
  MPI_Comm dup = MPI_COMM_NULL;
  if (int rc = MPI_Comm_dup(comm, &dup); rc != MPI_SUCCESS) {
    return mpi_failure(rc, "MPI_Comm_dup");
  }
  absl::StatusOr<std::unique_ptr<MpiCommunicator>> out =
      create(dup, Ownership::kOwn, max_message_bytes);
  if (!out.ok()) MPI_Comm_free(&dup);
  return out;
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool owned, int rank, int size,
                                 size_t max_message_bytes)
    : comm_(comm), owned_(owned), rank_(rank), size_(size),
      max_message_bytes_(max_message_bytes) {}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Comm_free(&comm_);
}

absl::Status MpiCommunicator::reduce(const TensorView& tensor, MPI_Op op, const char* what) {
  if (absl::Status s = require_host(tensor, what); !s.ok()) return s;
  const MPI_Datatype type = reduction_type(tensor.dtype);
  if (type == MPI_DATATYPE_NULL) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": dtype ", dtype_name(tensor.dtype),
                                                   " is not reducible here (f32, i32, i64)"));
  }
  const size_t elem = dtype_size(tensor.dtype);
  const int64_t per_call = static_cast<int64_t>(std::max<size_t>(max_message_bytes_ / elem, 1));
  const int64_t n = tensor.numel();
  char* base = static_cast<char*>(tensor.data);
  for (int64_t off = 0; off < n; off += per_call) {
    const int count = static_cast<int>(std::min(per_call, n - off));
    const int rc = MPI_Allreduce(MPI_IN_PLACE, base + off * elem, count, type, op, comm_);
    if (rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Allreduce (", what, ", ", n, " ",
                                          dtype_name(tensor.dtype), " elements, group of ",
                                          size_, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status MpiCommunicator::all_reduce_sum(const TensorView& tensor) {
  return reduce(tensor, MPI_SUM, "all_reduce_sum");
}

absl::Status MpiCommunicator::all_reduce_max(const TensorView& tensor) {
  return reduce(tensor, MPI_MAX, "all_reduce_max");
}

absl::Status MpiCommunicator::all_gather(const TensorView& in, const TensorView& out) {
  if (absl::Status s = require_host(in, "all_gather"); !s.ok()) return s;
  if (absl::Status s = require_host(out, "all_gather"); !s.ok()) return s;
  const size_t n = in.nbytes();
  if (out.nbytes() != n * static_cast<size_t>(size_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "all_gather: output holds ", out.nbytes(), " bytes, expected ", size_, " x ", n));
  }
  char* out_base = static_cast<char*>(out.data);
  const char* in_base = static_cast<const char*>(in.data);
  const bool in_place = in_base == out_base + static_cast<size_t>(rank_) * n;
  if (!in_place && n > 0 && in_base < out_base + out.nbytes() && out_base < in_base + n) {
    return absl::InvalidArgumentError(
        "all_gather: input overlaps the output other than at this rank's slot");
  }
  if (n <= max_message_bytes_) {
    const int count = static_cast<int>(n);
    const int rc = MPI_Allgather(in_place ? MPI_IN_PLACE : in_base, count, MPI_BYTE, out_base,
                                 count, MPI_BYTE, comm_);
    if (rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Allgather (all_gather, ", n,
                                          " bytes per rank, group of ", size_, ")"));
    }
    return absl::OkStatus();
  }
  // Chunk c of every rank's slice lands at out + r * n + offset: a receive type of `len` bytes
  // whose extent is a whole slice places rank r's piece there.
  for (size_t off = 0; off < n; off += max_message_bytes_) {
    const int len = static_cast<int>(std::min(max_message_bytes_, n - off));
    MPI_Datatype piece = MPI_DATATYPE_NULL;
    MPI_Datatype slot = MPI_DATATYPE_NULL;
    MPI_Type_contiguous(len, MPI_BYTE, &piece);
    MPI_Type_create_resized(piece, 0, static_cast<MPI_Aint>(n), &slot);
    MPI_Type_commit(&slot);
    const int rc = MPI_Allgather(in_place ? MPI_IN_PLACE : in_base + off, len, MPI_BYTE,
                                 out_base + off, 1, slot, comm_);
    MPI_Type_free(&slot);
    MPI_Type_free(&piece);
    if (rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Allgather (all_gather, ", n,
                                          " bytes per rank in pieces, group of ", size_, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status MpiCommunicator::check_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": peer ", peer,
                                                   " is not another rank of this group of ",
                                                   size_, " (this rank is ", rank_, ")"));
  }
  return absl::OkStatus();
}

absl::Status MpiCommunicator::send(const TensorView& tensor, int dest) {
  if (absl::Status s = require_host(tensor, "send"); !s.ok()) return s;
  if (absl::Status s = check_peer(dest, "send"); !s.ok()) return s;
  const size_t n = tensor.nbytes();
  const char* base = static_cast<const char*>(tensor.data);
  // At least one message, so an empty send still meets its recv.
  size_t off = 0;
  do {
    const int len = static_cast<int>(std::min(max_message_bytes_, n - off));
    const int rc = MPI_Send(base + off, len, MPI_BYTE, dest, kTensorTag, comm_);
    if (rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Send (send of ", n, " bytes from rank ", rank_,
                                          " to rank ", dest, ")"));
    }
    off += static_cast<size_t>(len);
  } while (off < n);
  return absl::OkStatus();
}

absl::Status MpiCommunicator::recv(const TensorView& tensor, int src) {
  if (absl::Status s = require_host(tensor, "recv"); !s.ok()) return s;
  if (absl::Status s = check_peer(src, "recv"); !s.ok()) return s;
  const size_t n = tensor.nbytes();
  char* base = static_cast<char*>(tensor.data);
  size_t off = 0;
  do {
    const int len = static_cast<int>(std::min(max_message_bytes_, n - off));
    MPI_Status status;
    const int rc = MPI_Recv(base + off, len, MPI_BYTE, src, kTensorTag, comm_, &status);
    if (rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Recv (recv of ", n, " bytes on rank ", rank_,
                                          " from rank ", src, ")"));
    }
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (got != len) {
      return absl::InvalidArgumentError(absl::StrCat(
          "recv on rank ", rank_, " from rank ", src, ": expected ", n, " bytes (a piece of ",
          len, " at offset ", off, ") but the sender's message had ", got));
    }
    off += static_cast<size_t>(len);
  } while (off < n);
  return absl::OkStatus();
}

absl::Status MpiCommunicator::broadcast(const TensorView& tensor, int root) {
  if (absl::Status s = require_host(tensor, "broadcast"); !s.ok()) return s;
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast: root ", root, " is outside the group of ", size_));
  }
  const size_t n = tensor.nbytes();
  char* base = static_cast<char*>(tensor.data);
  size_t off = 0;
  do {
    const int len = static_cast<int>(std::min(max_message_bytes_, n - off));
    const int rc = MPI_Bcast(base + off, len, MPI_BYTE, root, comm_);
    if (rc != MPI_SUCCESS) {
      return mpi_failure(rc, absl::StrCat("MPI_Bcast (broadcast of ", n, " bytes from root ",
                                          root, ", group of ", size_, ")"));
    }
    off += static_cast<size_t>(len);
  } while (off < n);
  return absl::OkStatus();
}

absl::Status MpiCommunicator::barrier() {
  if (int rc = MPI_Barrier(comm_); rc != MPI_SUCCESS) {
    return mpi_failure(rc, absl::StrCat("MPI_Barrier (group of ", size_, ")"));
  }
  return absl::OkStatus();
}

}  // namespace weft
