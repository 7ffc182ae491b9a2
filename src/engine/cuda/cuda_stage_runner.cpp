#include "engine/cuda/cuda_stage_runner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "core/status_macros.h"
#include "engine/cuda/cuda_executor_state.h"
#include "engine/vocab_shard_output.h"
#include "parallel/cuda_device_staging.h"
#include "parallel/host_staged_communicator.h"
#include "parallel/nccl_communicator.h"

namespace weft {

namespace kc = kernels::cuda;
using kc::cuda_check;

// Members in destruction order last to first: the device communicators use the state's stream.
struct CudaStageRunner::Impl {
  std::unique_ptr<CudaExecutor::State> s;
  Communicator* host_tp = nullptr;
  std::unique_ptr<NcclCommunicator> nccl;
  std::unique_ptr<CudaDeviceStaging> staging;
  std::unique_ptr<HostStagedCommunicator> staged;

  // The current step.
  StagedStep step;
  int32_t sample_candidates = 0;
  bool candidate_logsumexp = false;
  bool hidden_from_host = false;  // run_layers() starts from `hidden_in`
  Tensor hidden_in;               // F32 [tokens, hidden]
  Tensor hidden_out;              // F32 [tokens, hidden]
  std::vector<uint16_t> host_rows;  // the compute dtype's bits of the residual stream
};

CudaStageRunner::CudaStageRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaStageRunner::~CudaStageRunner() = default;

absl::StatusOr<std::unique_ptr<CudaStageRunner>> CudaStageRunner::create(const ModelConfig& config,
                                                                         const WeightStore& weights,
                                                                         const CudaExecutorOptions& options,
                                                                         const CudaRankShare& share,
                                                                         Communicator& host_tp) {
  if (host_tp.size() != share.tp_size || host_tp.rank() != share.tp_rank) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA stage runner: the share is rank ", share.tp_rank, " of ",
                                                   share.tp_size, ", the TP group's communicator rank ",
                                                   host_tp.rank(), " of ", host_tp.size()));
  }
  auto impl = std::make_unique<Impl>();
  WEFT_ASSIGN_OR_RETURN(impl->s, create_cuda_state(config, weights, options, share));
  impl->host_tp = &host_tp;
  return std::unique_ptr<CudaStageRunner>(new CudaStageRunner(std::move(impl)));
}

absl::Status CudaStageRunner::join_tp_group() {
  Impl& m = *impl_;
  Communicator& host = *m.host_tp;
  if (host.size() == 1) return absl::OkStatus();
  Tensor mine = Tensor::empty(DType::kI32, Shape{1});
  mine.data_as<int32_t>()[0] = m.s->options.device;
  Tensor all = Tensor::empty(DType::kI32, Shape{host.size()});
  WEFT_RETURN_IF_ERROR(host.all_gather(mine.view(), all.view()));
  std::vector<int32_t> devices(all.data_as<int32_t>(), all.data_as<int32_t>() + host.size());
  std::sort(devices.begin(), devices.end());
  const bool shared = std::adjacent_find(devices.begin(), devices.end()) != devices.end();
  // Every rank sees the same devices, so every rank takes the same branch.
  if (shared) {
    m.staging = std::make_unique<CudaDeviceStaging>(m.s->stream);
    m.staged = std::make_unique<HostStagedCommunicator>(host, *m.staging);
    m.s->tp = m.staged.get();
    return absl::OkStatus();
  }
  WEFT_ASSIGN_OR_RETURN(m.nccl, NcclCommunicator::create(host, m.s->options.device));
  m.nccl->set_compute_stream(m.s->stream);
  m.s->tp = m.nccl.get();
  return absl::OkStatus();
}

const char* CudaStageRunner::tp_transport() const {
  if (impl_->nccl) return "NCCL";
  return impl_->staged ? "host-staged" : "none";
}

int64_t CudaStageRunner::num_kv_blocks() const { return impl_->s->num_blocks; }

const ModelConfig& CudaStageRunner::config() const { return impl_->s->config; }

absl::Status CudaStageRunner::transfer_kv(const StepPlan& plan, KvLoadReport* report) {
  if (plan.kv_transfers.empty()) return absl::OkStatus();
  return absl::UnimplementedError(
      "--kv-offload-bytes / --kv-disk-cache: the KV tiers work with the CPU pool only for now; use --device cpu");
}

absl::Status CudaStageRunner::begin_step(const StepPlan& plan) {
  Impl& m = *impl_;
  if (m.s->tp == nullptr && m.host_tp->size() > 1) {
    return absl::FailedPreconditionError("CUDA stage runner: a step before join_tp_group()");
  }
  WEFT_ASSIGN_OR_RETURN(m.step, m.s->stage_metadata(plan, /*allow_graph=*/false));
  m.sample_candidates = plan.sample_candidates;
  m.candidate_logsumexp = plan.candidate_logsumexp;
  m.hidden_from_host = false;
  return absl::OkStatus();
}

absl::StatusOr<TensorView> CudaStageRunner::incoming_hidden() {
  Impl& m = *impl_;
  m.hidden_in = Tensor::empty(DType::kF32, Shape{m.step.shape.num_tokens, m.s->config.hidden_size});
  m.hidden_from_host = true;
  return m.hidden_in.view();
}

absl::Status CudaStageRunner::embed() { return impl_->s->enqueue_embedding(impl_->step.shape); }

absl::Status CudaStageRunner::run_layers() {
  Impl& m = *impl_;
  CudaExecutor::State& s = *m.s;
  if (m.hidden_from_host) {
    // The previous stage's rows, rounded once to the compute dtype (its residual stream was in
    // that dtype already, so nothing is lost).
    const int64_t n = m.hidden_in.numel();
    m.host_rows.resize(static_cast<size_t>(n));
    const float* in = m.hidden_in.data_as<float>();
    for (int64_t i = 0; i < n; ++i) m.host_rows[i] = s.dtype == DType::kF16 ? float_to_f16(in[i]) : float_to_bf16(in[i]);
    // From pageable memory the copy has taken the bytes when the call returns.
    WEFT_RETURN_IF_ERROR(cuda_check(cudaMemcpyAsync(s.ws(s.act.residual), m.host_rows.data(), n * sizeof(uint16_t),
                                                    cudaMemcpyHostToDevice, s.stream),
                                    "hidden states from the previous stage (cudaMemcpyAsync)"));
    m.hidden_from_host = false;
  }
  return s.enqueue_layers(m.step.shape);
}

absl::StatusOr<TensorView> CudaStageRunner::outgoing_hidden() {
  Impl& m = *impl_;
  CudaExecutor::State& s = *m.s;
  const int64_t t = m.step.shape.num_tokens, h = s.config.hidden_size;
  m.host_rows.resize(static_cast<size_t>(t * h));
  WEFT_RETURN_IF_ERROR(cuda_check(cudaMemcpyAsync(m.host_rows.data(), s.ws(s.act.residual), t * h * sizeof(uint16_t),
                                                  cudaMemcpyDeviceToHost, s.stream),
                                  "hidden states to the next stage (cudaMemcpyAsync)"));
  WEFT_RETURN_IF_ERROR(cuda_check(cudaStreamSynchronize(s.stream), "stage (cudaStreamSynchronize)"));
  m.hidden_out = Tensor::empty(DType::kF32, Shape{t, h});
  float* out = m.hidden_out.data_as<float>();
  for (int64_t i = 0; i < t * h; ++i) {
    out[i] = s.dtype == DType::kF16 ? f16_to_float(m.host_rows[i]) : bf16_to_float(m.host_rows[i]);
  }
  return m.hidden_out.view();
}

absl::StatusOr<StepOutput> CudaStageRunner::output() {
  Impl& m = *impl_;
  CudaExecutor::State& s = *m.s;
  const int64_t rows = m.step.logit_rows, shard = s.weights.vocab_rows;
  // This rank's vocabulary shard of every logits row, chunk by chunk through the workspace.
  Tensor local = Tensor::empty(DType::kF32, Shape{rows, shard});
  for (int64_t begin = 0; begin < rows; begin += s.max_logit_rows) {
    const int64_t count = std::min(s.max_logit_rows, rows - begin);
    WEFT_RETURN_IF_ERROR(s.enqueue_head(m.step.shape, begin, count, /*greedy=*/false));
    WEFT_RETURN_IF_ERROR(cuda_check(cudaMemcpyAsync(local.data_as<float>() + begin * shard, s.ws(s.act.logits),
                                                    count * shard * sizeof(float), cudaMemcpyDeviceToHost, s.stream),
                                    "logits to host (cudaMemcpyAsync)"));
    WEFT_RETURN_IF_ERROR(cuda_check(cudaStreamSynchronize(s.stream), "step (cudaStreamSynchronize)"));
  }
  if (rows == 0) WEFT_RETURN_IF_ERROR(cuda_check(cudaStreamSynchronize(s.stream), "step (cudaStreamSynchronize)"));
  return vocab_shard_output(local, s.weights.vocab_begin, s.config.vocab_size, m.sample_candidates,
                            m.candidate_logsumexp, *m.host_tp);
}

}  // namespace weft
