#include "engine/cuda/cuda_weights.h"

#include "core/status_macros.h"

namespace weft {

using kernels::cuda::cuda_check;
using kernels::cuda::DeviceBuffer;

DType cuda_compute_dtype(DType checkpoint_dtype) {
  return checkpoint_dtype == DType::kF16 ? DType::kF16 : DType::kBF16;
}

absl::StatusOr<CudaModelWeights> upload_cuda_weights(const CudaWeightLayout& layout, const WeightStore& weights,
                                                     cudaStream_t stream) {
  const DType dtype = layout.dtype;
  CudaModelWeights w;
  w.dtype = dtype;
  w.first_layer = layout.first_layer;
  w.vocab_begin = layout.vocab_begin;
  w.vocab_rows = layout.vocab_rows;
  w.layers.assign(static_cast<size_t>(layout.end_layer - layout.first_layer), CudaLayerWeights{});
  WEFT_ASSIGN_OR_RETURN(w.storage, DeviceBuffer::allocate(static_cast<size_t>(layout.total_bytes)));
  char* base = w.storage.as<char>();
  std::vector<uint16_t> packed;
  for (const CudaWeightEntry& e : layout.entries) {
    WEFT_RETURN_IF_ERROR(pack_cuda_weight(e, weights, dtype, packed));
    WEFT_RETURN_IF_ERROR(cuda_check(cudaMemcpyAsync(base + e.offset, packed.data(), packed.size() * sizeof(uint16_t),
                                                    cudaMemcpyHostToDevice, stream),
                                    "upload weights (cudaMemcpyAsync)"));
    // The packing buffer is reused for the next entry: wait.
    WEFT_RETURN_IF_ERROR(cuda_check(cudaStreamSynchronize(stream), "upload weights (sync)"));
    const void* at = base + e.offset;
    CudaLayerWeights* l = e.layer >= 0 ? &w.layers[static_cast<size_t>(e.layer - layout.first_layer)] : nullptr;
    switch (e.slot) {
      case CudaWeightSlot::kEmbedding: w.embedding = at; break;
      case CudaWeightSlot::kFinalNorm: w.final_norm = at; break;
      case CudaWeightSlot::kLmHead: w.lm_head = at; break;
      case CudaWeightSlot::kInputNorm: l->input_norm = at; break;
      case CudaWeightSlot::kQkv: l->qkv = at; break;
      case CudaWeightSlot::kQkvBias: l->qkv_bias = at; break;
      case CudaWeightSlot::kQNorm: l->q_norm = at; break;
      case CudaWeightSlot::kKNorm: l->k_norm = at; break;
      case CudaWeightSlot::kOProj: l->o_proj = at; break;
      case CudaWeightSlot::kOBias: l->o_bias = at; break;
      case CudaWeightSlot::kPostNorm: l->post_norm = at; break;
      case CudaWeightSlot::kGateUp: l->gate_up = at; break;
      case CudaWeightSlot::kGateUpBias: l->gate_up_bias = at; break;
      case CudaWeightSlot::kDown: l->down = at; break;
      case CudaWeightSlot::kDownBias: l->down_bias = at; break;
    }
  }
  if (layout.tied_head && layout.last_stage) w.lm_head = w.embedding;
  return w;
}

}  // namespace weft
