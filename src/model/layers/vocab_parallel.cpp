#include "model/layers/vocab_parallel.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "model/layers/parallel_linear.h"
#include "weft/kernels/embedding.h"
#include "weft/kernels/linear.h"
#include "weft/kernels/quantize.h"

namespace weft {
namespace {

absl::StatusOr<Tensor> load_vocab_shard(const LoadContext& ctx, const std::string& name,
                                        ShardRange shard) {
  WEFT_RETURN_IF_ERROR(require_dense_module(ctx, name));
  return ctx.weights.get_slice(name + ".weight",
                               Shape{ctx.config.vocab_size, ctx.config.hidden_size}, 0,
                               shard.begin, shard.count);
}

}  // namespace

absl::StatusOr<VocabParallelEmbedding> VocabParallelEmbedding::load(const LoadContext& ctx,
                                                                    const std::string& name) {
  VocabParallelEmbedding layer;
  layer.shard_ = padded_shard(ctx.config.vocab_size, ctx.tp.rank(), ctx.tp.size());
  WEFT_ASSIGN_OR_RETURN(layer.table_, load_vocab_shard(ctx, name, layer.shard_));
  // Read whole every step where the LM head is tied to it (and not given an int8 copy);
  // otherwise looked up row by row, and left mapped: only the rows of tokens seen are resident.
  if (ctx.config.tie_word_embeddings && !ctx.quantize_lm_head) {
    layer.table_ = held_weight(ctx, std::move(layer.table_));
  }
  return layer;
}

absl::Status VocabParallelEmbedding::forward(const TensorView& ids, const TensorView& out,
                                             Communicator& tp, ThreadPool& pool) const {
  kernels::embedding_lookup(table_.view(), ids, shard_.begin, out, pool);
  if (tp.size() == 1) return absl::OkStatus();
  return tp.all_reduce_sum(out);
}

absl::StatusOr<ParallelLmHead> ParallelLmHead::load(const LoadContext& ctx,
                                                    const std::string& name) {
  ParallelLmHead head;
  head.shard_ = padded_shard(ctx.config.vocab_size, ctx.tp.rank(), ctx.tp.size());
  head.vocab_size_ = ctx.config.vocab_size;
  WEFT_ASSIGN_OR_RETURN(head.weight_, load_vocab_shard(ctx, name, head.shard_));
  WEFT_RETURN_IF_ERROR(head.quantize(ctx));
  head.weight_ = held_weight(ctx, std::move(head.weight_));
  return head;
}

absl::StatusOr<ParallelLmHead> ParallelLmHead::tied(const LoadContext& ctx,
                                                    const VocabParallelEmbedding& embedding) {
  ParallelLmHead head;
  head.weight_ = embedding.table();
  head.shard_ = embedding.shard();
  head.vocab_size_ = ctx.config.vocab_size;
  head.tied_ = true;
  WEFT_RETURN_IF_ERROR(head.quantize(ctx));
  return head;
}

absl::Status ParallelLmHead::quantize(const LoadContext& ctx) {
  if (!ctx.quantize_lm_head) return absl::OkStatus();
  if (!is_float_dtype(weight_.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--quantize-lm-head: the LM head (", tied_ ? "tied to model.embed_tokens" : "lm_head", ") is already ",
        dtype_name(weight_.dtype()), "; it applies to F32 / F16 / BF16 heads"));
  }
  ThreadPool pool(1);
  kernels::QuantizedRows q = kernels::quantize_rows_int8(weight_.view(), pool);
  // A tied head's table stays the embedding's; an own head's is released.
  if (!tied_) ctx.weights.release(weight_);
  weight_ = std::move(q.values);
  scale_ = std::move(q.scales);
  return absl::OkStatus();
}

void ParallelLmHead::forward(const TensorView& hidden, const TensorView& local_logits,
                             ThreadPool& pool) const {
  if (scale_.defined()) {
    kernels::linear_int8(hidden, weight_.view(), scale_.view(), nullptr, local_logits, pool);
  } else {
    kernels::linear(hidden, weight_.view(), nullptr, local_logits, pool);
  }
}

}  // namespace weft
