#include "parallel/host_staged_communicator.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "core/status_macros.h"

namespace weft {
namespace {

bool on_device(const TensorView& t) { return t.device == Device::kCuda; }

float widen(DType dtype, uint16_t bits) {
  return dtype == DType::kBF16 ? bf16_to_float(bits) : f16_to_float(bits);
}

uint16_t narrow(DType dtype, float value) {
  return dtype == DType::kBF16 ? float_to_bf16(value) : float_to_f16(value);
}

}  // namespace

absl::StatusOr<TensorView> HostStagedCommunicator::stage(const TensorView& t, int which, bool copy_in) {
  if (t.data == nullptr && t.nbytes() > 0) {
    return absl::InvalidArgumentError("HostStagedCommunicator: a device tensor without data");
  }
  std::vector<unsigned char>& buffer = buffers_[which];
  if (buffer.size() < t.nbytes()) buffer.resize(t.nbytes());
  TensorView host{buffer.data(), t.dtype, t.shape, Device::kCpu};
  if (copy_in && t.nbytes() > 0) WEFT_RETURN_IF_ERROR(staging_.to_host(t.data, host.data, t.nbytes()));
  return host;
}

absl::Status HostStagedCommunicator::unstage(const TensorView& host, const TensorView& device) {
  if (device.nbytes() == 0) return absl::OkStatus();
  return staging_.to_device(host.data, device.data, device.nbytes());
}

absl::Status HostStagedCommunicator::reduce(const TensorView& tensor, Reduction op) {
  auto host_reduce = [&](const TensorView& t) {
    return op == Reduction::kSum ? host_.all_reduce_sum(t) : host_.all_reduce_max(t);
  };
  const bool half = tensor.dtype == DType::kF16 || tensor.dtype == DType::kBF16;
  if (!on_device(tensor) && !half) return host_reduce(tensor);
  TensorView host = tensor;
  if (on_device(tensor)) {
    WEFT_ASSIGN_OR_RETURN(host, stage(tensor, 0, true));
  }
  if (half) {
    // Widen, reduce in F32, round once: the same bits on every rank.
    const int64_t n = host.numel();
    widened_.resize(static_cast<size_t>(n));
    const uint16_t* bits = host.as<uint16_t>();
    for (int64_t i = 0; i < n; ++i) widened_[i] = widen(host.dtype, bits[i]);
    WEFT_RETURN_IF_ERROR(host_reduce(TensorView{widened_.data(), DType::kF32, Shape{n}, Device::kCpu}));
    uint16_t* out = host.as<uint16_t>();
    for (int64_t i = 0; i < n; ++i) out[i] = narrow(host.dtype, widened_[i]);
  } else {
    WEFT_RETURN_IF_ERROR(host_reduce(host));
  }
  return on_device(tensor) ? unstage(host, tensor) : absl::OkStatus();
}

absl::Status HostStagedCommunicator::all_reduce_sum(const TensorView& tensor) {
  return reduce(tensor, Reduction::kSum);
}

absl::Status HostStagedCommunicator::all_reduce_max(const TensorView& tensor) {
  return reduce(tensor, Reduction::kMax);
}

absl::Status HostStagedCommunicator::all_gather(const TensorView& in, const TensorView& out) {
  if (on_device(in) != on_device(out)) {
    return absl::InvalidArgumentError(
        "HostStagedCommunicator all_gather: the input and the output must both be device tensors or "
        "both host tensors");
  }
  if (!on_device(in)) return host_.all_gather(in, out);
  if (out.nbytes() != static_cast<size_t>(size()) * in.nbytes()) {
    return absl::InvalidArgumentError(absl::StrCat("HostStagedCommunicator all_gather: the output holds ",
                                                   out.nbytes(), " bytes, ", size(), " ranks x ", in.nbytes(),
                                                   " are needed"));
  }
  // `in` may be this rank's slot of `out` (in place): it is copied out before `out` is written.
  WEFT_ASSIGN_OR_RETURN(TensorView host_in, stage(in, 0, true));
  WEFT_ASSIGN_OR_RETURN(TensorView host_out, stage(out, 1, false));
  WEFT_RETURN_IF_ERROR(host_.all_gather(host_in, host_out));
  return unstage(host_out, out);
}

absl::Status HostStagedCommunicator::send(const TensorView& tensor, int dest) {
  if (!on_device(tensor)) return host_.send(tensor, dest);
  WEFT_ASSIGN_OR_RETURN(TensorView host, stage(tensor, 0, true));
  return host_.send(host, dest);
}

absl::Status HostStagedCommunicator::recv(const TensorView& tensor, int src) {
  if (!on_device(tensor)) return host_.recv(tensor, src);
  WEFT_ASSIGN_OR_RETURN(TensorView host, stage(tensor, 0, false));
  WEFT_RETURN_IF_ERROR(host_.recv(host, src));
  return unstage(host, tensor);
}

absl::Status HostStagedCommunicator::broadcast(const TensorView& tensor, int root) {
  if (!on_device(tensor)) return host_.broadcast(tensor, root);
  WEFT_ASSIGN_OR_RETURN(TensorView host, stage(tensor, 0, rank() == root));
  WEFT_RETURN_IF_ERROR(host_.broadcast(host, root));
  return rank() == root ? absl::OkStatus() : unstage(host, tensor);
}

}  // namespace weft
