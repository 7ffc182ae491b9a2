#include "model/layers/sparse_moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "weft/kernels/linear.h"

namespace weft {
namespace {

struct Routing {
  std::vector<int32_t> expert;  // [tokens * top_k]: the chosen experts, best first
  std::vector<float> weight;    // [tokens * top_k]: their routing weights
};

// softmax(logits) in F32, the top_k largest probabilities (ties: the lower expert index), and
// those renormalised to sum 1 when `normalize` (transformers' TopKRouter).
Routing route(const Tensor& logits, int64_t top_k, bool normalize, ThreadPool& pool) {
  const int64_t tokens = logits.dim(0), experts = logits.dim(1);
  Routing r;
  r.expert.resize(static_cast<size_t>(tokens * top_k));
  r.weight.resize(static_cast<size_t>(tokens * top_k));
  pool.parallel_for(tokens, [&](int64_t begin, int64_t end) {
    std::vector<float> prob(static_cast<size_t>(experts));
    std::vector<int32_t> order(static_cast<size_t>(experts));
    for (int64_t t = begin; t < end; ++t) {
      const float* row = logits.data_as<float>() + t * experts;
      const float max = *std::max_element(row, row + experts);
      float sum = 0.0f;
      for (int64_t e = 0; e < experts; ++e) sum += prob[e] = std::exp(row[e] - max);
      for (int64_t e = 0; e < experts; ++e) prob[e] /= sum;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int32_t a, int32_t b) {
        return prob[a] > prob[b] || (prob[a] == prob[b] && a < b);
      });
      float chosen = 0.0f;
      for (int64_t k = 0; k < top_k; ++k) chosen += prob[order[k]];
      for (int64_t k = 0; k < top_k; ++k) {
        r.expert[t * top_k + k] = order[k];
        r.weight[t * top_k + k] = normalize ? prob[order[k]] / chosen : prob[order[k]];
      }
    }
  });
  return r;
}

}  // namespace

absl::StatusOr<SparseMoe> SparseMoe::load(const LoadContext& ctx, int64_t layer) {
  const ModelConfig& c = ctx.config;
  const MoeConfig& moe = c.moe;
  const int tp = ctx.tp.size();
  const int ep = ctx.expert_parallel;
  if (ep < 1 || tp % ep != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--ep ", ep, " must divide --tp ", tp,
                                                   " (experts are spread over the TP group)"));
  }
  if (moe.num_experts % ep != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: the number of experts (field '",
        moe.naming == MoeConfig::Naming::kMixtral ? "num_local_experts" : "num_experts", "': ",
        moe.num_experts, ") is not divisible by --ep ", ep));
  }
  const bool mixtral = moe.naming == MoeConfig::Naming::kMixtral;
  const std::string prefix =
      absl::StrCat("model.layers.", layer, mixtral ? ".block_sparse_moe" : ".mlp");
  if (!ctx.weights.contains(prefix + ".experts.0." + (mixtral ? "w1" : "gate_proj") + ".weight") &&
      ctx.weights.contains(prefix + ".experts.gate_up_proj")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", prefix, ".experts.gate_up_proj' holds all experts fused; weft reads one tensor "
        "per expert projection ('", prefix, ".experts.0.", mixtral ? "w1" : "gate_proj",
        ".weight', ...), the layout save_pretrained writes"));
  }

  SparseMoe block;
  block.num_experts_ = moe.num_experts;
  block.top_k_ = moe.experts_per_token;
  block.normalize_topk_ = moe.normalize_topk;
  block.routed_tokens_.assign(static_cast<size_t>(moe.num_experts), 0);
  WEFT_RETURN_IF_ERROR(require_dense_module(ctx, prefix + ".gate"));
  WEFT_ASSIGN_OR_RETURN(block.router_,
                        ctx.weights.get(prefix + ".gate.weight", Shape{moe.num_experts, c.hidden_size}));

  const int group_ranks = tp / ep;
  const int group = ctx.tp.rank() / group_ranks;
  const int64_t per_group = moe.num_experts / ep;
  block.first_expert_ = group * per_group;
  const ShardRange shard =
      padded_shard(moe.expert_intermediate_size, ctx.tp.rank() % group_ranks, group_ranks);
  for (int64_t e = block.first_expert_; e < block.first_expert_ + per_group; ++e) {
    const std::string expert = absl::StrCat(prefix, ".experts.", e);
    const GatedMlpNames names =
        mixtral ? GatedMlpNames{expert + ".w1", expert + ".w3", expert + ".w2"}
                : GatedMlpNames{expert + ".gate_proj", expert + ".up_proj", expert + ".down_proj"};
    WEFT_ASSIGN_OR_RETURN(GatedMlp mlp,
                          GatedMlp::load_shard(ctx, names, moe.expert_intermediate_size, shard));
    block.experts_.push_back(std::move(mlp));
  }
  if (moe.shared_expert_intermediate_size > 0) {
    const std::string shared = prefix + ".shared_expert";
    const int64_t size = moe.shared_expert_intermediate_size;
    WEFT_ASSIGN_OR_RETURN(
        block.shared_expert_,
        GatedMlp::load_shard(ctx, {shared + ".gate_proj", shared + ".up_proj", shared + ".down_proj"},
                             size, padded_shard(size, ctx.tp.rank(), tp)));
    WEFT_RETURN_IF_ERROR(require_dense_module(ctx, prefix + ".shared_expert_gate"));
    WEFT_ASSIGN_OR_RETURN(block.shared_expert_gate_,
                          ctx.weights.get(prefix + ".shared_expert_gate.weight", Shape{1, c.hidden_size}));
  }
  return block;
}

absl::Status SparseMoe::forward(const ForwardContext& fc, const TensorView& x,
                                const TensorView& out) const {
  const int64_t tokens = x.shape[0], hidden = x.shape[1];
  Tensor logits = Tensor::empty(DType::kF32, Shape{tokens, num_experts_});
  kernels::linear(x, router_.view(), nullptr, logits.view(), fc.pool);
  const Routing routing = route(logits, top_k_, normalize_topk_, fc.pool);
  for (int32_t e : routing.expert) ++routed_tokens_[static_cast<size_t>(e)];

  // Group the (token, weight) pairs of this rank's experts by expert (a counting sort).
  const int64_t local = num_local_experts();
  std::vector<int64_t> start(static_cast<size_t>(local + 1), 0);
  for (int32_t e : routing.expert) {
    const int64_t slot = e - first_expert_;
    if (slot >= 0 && slot < local) ++start[static_cast<size_t>(slot + 1)];
  }
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  std::vector<int64_t> row_token(static_cast<size_t>(start.back()));
  std::vector<float> row_weight(static_cast<size_t>(start.back()));
  for (size_t i = 0; i < routing.expert.size(); ++i) {
    const int64_t slot = routing.expert[i] - first_expert_;
    if (slot < 0 || slot >= local) continue;
    const int64_t at = fill[static_cast<size_t>(slot)]++;
    row_token[static_cast<size_t>(at)] = static_cast<int64_t>(i) / top_k_;
    row_weight[static_cast<size_t>(at)] = routing.weight[i];
  }

  float* y = out.as<float>();
  std::memset(y, 0, static_cast<size_t>(tokens * hidden) * sizeof(float));
  const float* in = x.as<float>();
  for (int64_t slot = 0; slot < local; ++slot) {
    const int64_t begin = start[static_cast<size_t>(slot)];
    const int64_t rows = start[static_cast<size_t>(slot + 1)] - begin;
    if (rows == 0) continue;
    Tensor gathered = Tensor::empty(DType::kF32, Shape{rows, hidden});
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(gathered.data_as<float>() + r * hidden, in + row_token[begin + r] * hidden,
                  static_cast<size_t>(hidden) * sizeof(float));
    }
    Tensor result = Tensor::empty(DType::kF32, Shape{rows, hidden});
    experts_[static_cast<size_t>(slot)].forward_partial(gathered.view(), result.view(), fc.pool);
    // An expert sees a token at most once, so its rows go to distinct output rows.
    fc.pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float w = row_weight[begin + r];
        const float* src = result.data_as<float>() + r * hidden;
        float* dst = y + row_token[begin + r] * hidden;
        for (int64_t j = 0; j < hidden; ++j) dst[j] += w * src[j];
      }
    });
  }

  if (shared_expert_) {
    Tensor shared = Tensor::empty(DType::kF32, Shape{tokens, hidden});
    shared_expert_->forward_partial(x, shared.view(), fc.pool);
    Tensor gate = Tensor::empty(DType::kF32, Shape{tokens, 1});
    kernels::linear(x, shared_expert_gate_.view(), nullptr, gate.view(), fc.pool);
    fc.pool.parallel_for(tokens, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const float g = 1.0f / (1.0f + std::exp(-gate.data_as<float>()[t]));
        const float* src = shared.data_as<float>() + t * hidden;
        float* dst = y + t * hidden;
        for (int64_t j = 0; j < hidden; ++j) dst[j] += g * src[j];
      }
    });
  }
  if (fc.tp.size() > 1) return fc.tp.all_reduce_sum(out);
  return absl::OkStatus();
}

size_t SparseMoe::weight_bytes() const {
  size_t bytes = router_.nbytes();
  for (const GatedMlp& e : experts_) bytes += e.weight_bytes();
  if (shared_expert_) bytes += shared_expert_->weight_bytes() + shared_expert_gate_.nbytes();
  return bytes;
}

void SparseMoe::reset_routed_tokens() const {
  std::fill(routed_tokens_.begin(), routed_tokens_.end(), 0);
}

}  // namespace weft
