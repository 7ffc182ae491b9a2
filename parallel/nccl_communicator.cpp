#include "parallel/nccl_communicator.h"

#include <cstring>
#include <thread>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

absl::Status cuda_failure(cudaError_t err, const std::string& what) {
  return absl::InternalError(absl::StrCat(what, " failed: ", cudaGetErrorName(err), ": ",
                                          cudaGetErrorString(err)));
}

#define WEFT_CUDA_RETURN(expr, what)                          \
  do {                                                        \
    const cudaError_t weft_cuda_err_ = (expr);                \
    if (weft_cuda_err_ != cudaSuccess) {                      \
      return cuda_failure(weft_cuda_err_, (what));            \
    }                                                         \
  } while (0)

bool reduction_type(DType dtype, ncclDataType_t* out) {
  switch (dtype) {
    case DType::kF32: *out = ncclFloat32; return true;
    case DType::kF16: *out = ncclFloat16; return true;
    case DType::kBF16: *out = ncclBfloat16; return true;
    case DType::kI32: *out = ncclInt32; return true;
    case DType::kI64: *out = ncclInt64; return true;
    default: return false;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create(
    Communicator& bootstrap, int cuda_device) {
  const int rank = bootstrap.rank();
  const int size = bootstrap.size();
  WEFT_CUDA_RETURN(cudaSetDevice(cuda_device), absl::StrCat("cudaSetDevice(", cuda_device, ")"));

  // The id travels over the host communicator. Every rank takes part in the broadcast even
  // when rank 0 failed to make an id (it then sends zeros and reports its error), so no rank
  // is left waiting in the broadcast.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  ncclResult_t id_result = ncclSuccess;
  if (rank == 0) id_result = ncclGetUniqueId(&id);
  TensorView id_view{&id, DType::kU8, Shape{static_cast<int64_t>(sizeof(id))}, Device::kCpu};
  if (absl::Status s = bootstrap.broadcast(id_view, 0); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("NCCL bootstrap: broadcast of the unique id: ", s.message()));
  }
  if (id_result != ncclSuccess) {
    return absl::InternalError(
        absl::StrCat("ncclGetUniqueId failed: ", ncclGetErrorString(id_result)));
  }

  ncclComm_t comm = nullptr;
  if (ncclResult_t r = ncclCommInitRank(&comm, size, id, rank); r != ncclSuccess) {
    return absl::InternalError(absl::StrCat("ncclCommInitRank (rank ", rank, " of ", size,
                                            ", device ", cuda_device,
                                            ") failed: ", ncclGetErrorString(r)));
  }
  cudaStream_t stream = nullptr;
  cudaEvent_t before = nullptr;
  cudaEvent_t after = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err == cudaSuccess) err = cudaEventCreateWithFlags(&before, cudaEventDisableTiming);
  if (err == cudaSuccess) err = cudaEventCreateWithFlags(&after, cudaEventDisableTiming);
  if (err != cudaSuccess) {
    if (after) cudaEventDestroy(after);
    if (before) cudaEventDestroy(before);
    if (stream) cudaStreamDestroy(stream);
    ncclCommDestroy(comm);
    return cuda_failure(err, "creating the NCCL communicator's stream and events");
  }
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(comm, stream, before, after, rank, size, cuda_device));
}

NcclCommunicator::NcclCommunicator(ncclComm* comm, CUstream_st* stream, CUevent_st* before,
                                   CUevent_st* after, int rank, int size, int device)
    : comm_(comm), stream_(stream), before_(before), after_(after), rank_(rank), size_(size),
      device_(device) {}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_);
  // After an abort ncclCommAbort has already freed the communicator.
  if (!aborted_) {
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
  }
  cudaEventDestroy(after_);
  cudaEventDestroy(before_);
  cudaStreamDestroy(stream_);
}

absl::Status NcclCommunicator::nccl_failure(int result, const char* what) {
  const ncclResult_t r = static_cast<ncclResult_t>(result);
  std::string detail = ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(comm_); last != nullptr && *last != '\0') {
    absl::StrAppend(&detail, " (", last, ")");
  }
  return absl::InternalError(
      absl::StrCat(what, " on rank ", rank_, " of ", size_, " failed: ", detail));
}

absl::Status NcclCommunicator::begin(const TensorView& t, const char* what) {
  if (aborted_) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the NCCL communicator was aborted after an earlier error"));
  }
  if (t.device != Device::kCuda) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": NcclCommunicator moves device memory only, got a host tensor"));
  }
  WEFT_CUDA_RETURN(cudaSetDevice(device_), absl::StrCat(what, ": cudaSetDevice"));
  if (compute_stream_ != nullptr) {
    WEFT_CUDA_RETURN(cudaEventRecord(before_, compute_stream_),
                     absl::StrCat(what, ": cudaEventRecord on the compute stream"));
    WEFT_CUDA_RETURN(cudaStreamWaitEvent(stream_, before_, 0),
                     absl::StrCat(what, ": cudaStreamWaitEvent"));
  }
  return absl::OkStatus();
}

absl::Status NcclCommunicator::finish(const char* what) {
  if (compute_stream_ != nullptr) {
    WEFT_CUDA_RETURN(cudaEventRecord(after_, stream_),
                     absl::StrCat(what, ": cudaEventRecord on the NCCL stream"));
    WEFT_CUDA_RETURN(cudaStreamWaitEvent(compute_stream_, after_, 0),
                     absl::StrCat(what, ": cudaStreamWaitEvent on the compute stream"));
    return absl::OkStatus();
  }
  // Poll rather than block in cudaStreamSynchronize: a peer that died leaves the kernel
  // spinning, and only ncclCommGetAsyncError notices.
  while (true) {
    const cudaError_t q = cudaStreamQuery(stream_);
    if (q == cudaSuccess) return absl::OkStatus();
    if (q != cudaErrorNotReady) return cuda_failure(q, absl::StrCat(what, ": cudaStreamQuery"));
    ncclResult_t async = ncclSuccess;
    if (ncclResult_t r = ncclCommGetAsyncError(comm_, &async); r != ncclSuccess) {
      return nccl_failure(r, what);
    }
    if (async != ncclSuccess && async != ncclInProgress) {
      absl::Status status = nccl_failure(async, what);
      ncclCommAbort(comm_);
      aborted_ = true;
      return status;
    }
    std::this_thread::yield();
  }
}

absl::Status NcclCommunicator::all_reduce_sum(const TensorView& tensor) {
  constexpr const char* kWhat = "ncclAllReduce (all_reduce_sum)";
  ncclDataType_t type;
  if (!reduction_type(tensor.dtype, &type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "all_reduce_sum: dtype ", dtype_name(tensor.dtype), " is not reducible (f32, f16, bf16, "
                                                            "i32, i64)"));
  }
  if (absl::Status s = begin(tensor, kWhat); !s.ok()) return s;
  if (ncclResult_t r = ncclAllReduce(tensor.data, tensor.data, static_cast<size_t>(tensor.numel()),
                                     type, ncclSum, comm_, stream_);
      r != ncclSuccess) {
    return nccl_failure(r, kWhat);
  }
  return finish(kWhat);
}

absl::Status NcclCommunicator::all_reduce_max(const TensorView& tensor) {
  constexpr const char* kWhat = "ncclAllReduce (all_reduce_max)";
  ncclDataType_t type;
  if (!reduction_type(tensor.dtype, &type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "all_reduce_max: dtype ", dtype_name(tensor.dtype), " is not reducible (f32, f16, bf16, "
                                                            "i32, i64)"));
  }
  if (absl::Status s = begin(tensor, kWhat); !s.ok()) return s;
  if (ncclResult_t r = ncclAllReduce(tensor.data, tensor.data, static_cast<size_t>(tensor.numel()),
                                     type, ncclMax, comm_, stream_);
      r != ncclSuccess) {
    return nccl_failure(r, kWhat);
  }
  return finish(kWhat);
}

absl::Status NcclCommunicator::all_gather(const TensorView& in, const TensorView& out) {
  constexpr const char* kWhat = "ncclAllGather (all_gather)";
  const size_t n = in.nbytes();
  if (out.nbytes() != n * static_cast<size_t>(size_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "all_gather: output holds ", out.nbytes(), " bytes, expected ", size_, " x ", n));
  }
  if (out.device != Device::kCuda) {
    return absl::InvalidArgumentError("all_gather: the output must be a device tensor");
  }
  if (absl::Status s = begin(in, kWhat); !s.ok()) return s;
  if (ncclResult_t r = ncclAllGather(in.data, out.data, n, ncclUint8, comm_, stream_);
      r != ncclSuccess) {
    return nccl_failure(r, kWhat);
  }
  return finish(kWhat);
}

absl::Status NcclCommunicator::send(const TensorView& tensor, int dest) {
  if (dest < 0 || dest >= size_ || dest == rank_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "send: peer ", dest, " is not another rank of this group of ", size_));
  }
  const std::string what = absl::StrCat("ncclSend (send of ", tensor.nbytes(), " bytes to rank ",
                                        dest, ")");
  if (absl::Status s = begin(tensor, what.c_str()); !s.ok()) return s;
  ncclResult_t r = ncclGroupStart();
  if (r == ncclSuccess) r = ncclSend(tensor.data, tensor.nbytes(), ncclUint8, dest, comm_, stream_);
  const ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess) return nccl_failure(r, what.c_str());
  return finish(what.c_str());
}

absl::Status NcclCommunicator::recv(const TensorView& tensor, int src) {
  if (src < 0 || src >= size_ || src == rank_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "recv: peer ", src, " is not another rank of this group of ", size_));
  }
  const std::string what = absl::StrCat("ncclRecv (recv of ", tensor.nbytes(),
                                        " bytes from rank ", src, ")");
  if (absl::Status s = begin(tensor, what.c_str()); !s.ok()) return s;
  ncclResult_t r = ncclGroupStart();
  if (r == ncclSuccess) r = ncclRecv(tensor.data, tensor.nbytes(), ncclUint8, src, comm_, stream_);
  const ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess) return nccl_failure(r, what.c_str());
  return finish(what.c_str());
}

absl::Status NcclCommunicator::broadcast(const TensorView& tensor, int root) {
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast: root ", root, " is outside the group of ", size_));
  }
  const std::string what = absl::StrCat("ncclBroadcast (", tensor.nbytes(), " bytes from root ",
                                        root, ")");
  if (absl::Status s = begin(tensor, what.c_str()); !s.ok()) return s;
  if (ncclResult_t r = ncclBroadcast(tensor.data, tensor.data, tensor.nbytes(), ncclUint8, root,
                                     comm_, stream_);
      r != ncclSuccess) {
    return nccl_failure(r, what.c_str());
  }
  return finish(what.c_str());
}

}  // namespace weft
