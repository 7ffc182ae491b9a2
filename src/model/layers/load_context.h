// What a layer needs to load its shard of the weights.
#pragma once

#include "core/huge_page_arena.h"
#include "model/model_config.h"
#include "model/weight_quantization.h"
#include "model/weight_store.h"
#include "parallel/communicator.h"

namespace weft {

struct LoadContext {
  const WeightStore& weights;
  const ModelConfig& config;
  Communicator& tp;  // the tensor-parallel group this rank belongs to
  // Mixture-of-experts layers: the TP group is split into this many expert groups of
  // tp.size() / expert_parallel ranks; each group holds num_experts / expert_parallel whole experts
  // and splits their intermediate dimension over its ranks (model/layers/sparse_moe.h). 1: every
  // rank holds a slice of every expert.
  int expert_parallel = 1;
  // kInt8: column- and row-parallel weights are quantized to int8 per output row after this
  // rank has cut its shard (so a scale never spans two ranks' rows); embeddings, the LM head
  // and norms stay in the checkpoint's dtype.
  WeightQuantization quantization = WeightQuantization::kNone;
  // --quantize-lm-head: the LM head is quantized to int8 per output row (W8A16) at load; a head
  // tied to the embedding gets its own int8 copy (token lookups keep reading the embedding).
  bool quantize_lm_head = false;
  // --mmap-weights: the kernels read the weights where the checkpoint's files are mapped (less
  // memory while loading, slower decode) instead of copies on huge pages (held_weight below).
  bool mmap_weights = false;
  // Where held_weight() puts the weights; null: they stay where they are (as with mmap_weights).
  HugePageArena* arena = nullptr;
};

// A weight the kernels stream every step, as the rank keeps it: a copy of `t` in ctx.arena, on
// huge pages (core/huge_page_arena.h); where `t` is a view of a mapped file, its pages are
// released as they are copied. `t` unchanged with ctx.mmap_weights or without an arena.
Tensor held_weight(const LoadContext& ctx, Tensor t);

// How a rank loads its layers, besides the config and its place in the job.
struct ModelLoadOptions {
  int expert_parallel = 1;  // LoadContext::expert_parallel
  WeightQuantization quantization = WeightQuantization::kNone;
  bool quantize_lm_head = false;  // LoadContext::quantize_lm_head
  bool mmap_weights = false;      // LoadContext::mmap_weights
};

}  // namespace weft
