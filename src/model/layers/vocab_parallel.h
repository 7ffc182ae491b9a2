// The vocabulary-sharded ends of the model: the token embedding and the LM head. Rank r of a TP
// group of size s holds vocabulary rows [r * ceil(V/s), (r+1) * ceil(V/s)), zero-padded past V.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "model/layers/load_context.h"
#include "parallel/tp_shard.h"

namespace weft {

class VocabParallelEmbedding {
 public:
  // `name` is the table without ".weight" (e.g. "model.embed_tokens"), of shape [vocab, hidden].
  static absl::StatusOr<VocabParallelEmbedding> load(const LoadContext& ctx,
                                                     const std::string& name);
  // ids: I32 [tokens]; out: F32 [tokens, hidden]. Each rank fills the rows of its vocabulary
  // range and the group sums, so every rank ends with the full embeddings.
  absl::Status forward(const TensorView& ids, const TensorView& out, Communicator& tp,
                       ThreadPool& pool) const;
  const Tensor& table() const { return table_; }
  ShardRange shard() const { return shard_; }
  size_t weight_bytes() const { return table_.nbytes(); }

 private:
  Tensor table_;
  ShardRange shard_;
};

class ParallelLmHead {
 public:
  // Loads `name` ("lm_head"), or shares the embedding's shard when the embeddings are tied.
  // Under ctx.quantize_lm_head the head is int8 per output row (a tied one its own copy), an
  // InvalidArgument naming --quantize-lm-head when the weights are not F32 / F16 / BF16.
  static absl::StatusOr<ParallelLmHead> load(const LoadContext& ctx, const std::string& name);
  static absl::StatusOr<ParallelLmHead> tied(const LoadContext& ctx, const VocabParallelEmbedding& embedding);

  // hidden: F32 [rows, hidden]; local_logits: F32 [rows, shard().count]. Padded vocabulary rows
  // produce logits the caller must ignore (ids >= vocab_size()).
  void forward(const TensorView& hidden, const TensorView& local_logits, ThreadPool& pool) const;
  ShardRange shard() const { return shard_; }
  int64_t vocab_size() const { return vocab_size_; }
  // Bytes this layer owns (0 when tied and not quantized: the embedding owns them).
  size_t weight_bytes() const {
    return scale_.defined() ? weight_.nbytes() + scale_.nbytes() : tied_ ? 0 : weight_.nbytes();
  }
  bool quantized() const { return scale_.defined(); }

 private:
  // Quantizes weight_ to int8 rows under ctx.quantize_lm_head.
  absl::Status quantize(const LoadContext& ctx);

  Tensor weight_;
  Tensor scale_;  // F32 per row when int8 (--quantize-lm-head)
  ShardRange shard_;
  int64_t vocab_size_ = 0;
  bool tied_ = false;
};

}  // namespace weft
