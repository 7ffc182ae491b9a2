#include "model/layers/vocab_parallel.h"

#include "core/status_macros.h"
#include "model/layers/parallel_linear.h"
#include "weft/kernels/embedding.h"
#include "weft/kernels/linear.h"

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
  return head;
}

ParallelLmHead ParallelLmHead::tied(const VocabParallelEmbedding& embedding, int64_t vocab_size) {
  ParallelLmHead head;
  head.weight_ = embedding.table();
  head.shard_ = embedding.shard();
  head.vocab_size_ = vocab_size;
  head.tied_ = true;
  return head;
}

void ParallelLmHead::forward(const TensorView& hidden, const TensorView& local_logits,
                             ThreadPool& pool) const {
  kernels::linear(hidden, weight_.view(), nullptr, local_logits, pool);
}

}  // namespace weft
