#include "engine/cuda/device_memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

std::string human(int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (int64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / (1 << 30));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / (1 << 20));
  }
  return absl::StrCat(buf, " (", bytes, " B)");
}

}  // namespace

int64_t align_device_bytes(int64_t bytes) {
  return (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

absl::StatusOr<ActivationLayout> plan_activation_layout(const ActivationShape& s) {
  const std::pair<const char*, int64_t> sizes[] = {
      {"max_tokens", s.max_tokens},     {"max_seqs", s.max_seqs},
      {"max_logit_rows", s.max_logit_rows}, {"hidden", s.hidden},
      {"num_heads", s.num_heads},       {"num_kv_heads", s.num_kv_heads},
      {"head_dim", s.head_dim},         {"intermediate", s.intermediate},
      {"vocab", s.vocab},               {"act_bytes", s.act_bytes}};
  for (const auto& [name, value] : sizes) {
    if (value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("activation workspace: ", name, " must be positive, got ", value));
    }
  }
  if (s.decode_attention_bytes < 0) {
    return absl::InvalidArgumentError("activation workspace: decode_attention_bytes is negative");
  }
  ActivationLayout l;
  int64_t at = 0;
  auto take = [&at](int64_t bytes) {
    const int64_t offset = at;
    at += align_device_bytes(bytes);
    return offset;
  };
  const int64_t t = s.max_tokens, a = s.act_bytes;
  const int64_t q_width = s.num_heads * s.head_dim;
  const int64_t qkv_width = (s.num_heads + 2 * s.num_kv_heads) * s.head_dim;
  l.residual = take(t * s.hidden * a);
  l.normed = take(t * s.hidden * a);
  l.qkv = take(t * qkv_width * a);
  l.q = take(t * q_width * a);
  l.attn_out = take(t * q_width * a);
  l.delta = take(t * s.hidden * a);
  l.gate_up = take(t * 2 * s.intermediate * a);
  l.mlp_act = take(t * s.intermediate * a);
  l.selected = take(s.max_logit_rows * s.hidden * a);
  l.logits = take(s.max_logit_rows * s.vocab * 4);
  l.tokens_out = take(s.max_logit_rows * 4);
  l.decode_attention = take(std::max<int64_t>(s.decode_attention_bytes, 1));
  l.total_bytes = at;
  return l;
}

absl::StatusOr<DeviceMemoryPlan> plan_device_memory(const DeviceMemoryRequest& r) {
  if (r.free_bytes < 0 || r.weight_bytes < 0 || r.workspace_bytes < 0 || r.reserve_bytes < 0 ||
      r.kv_memory_bytes < 0 || r.max_blocks < 0 || r.min_blocks < 0) {
    return absl::InvalidArgumentError("device memory plan: sizes must not be negative");
  }
  if (r.kv_bytes_per_block <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device memory plan: kv_bytes_per_block must be positive, got ",
                     r.kv_bytes_per_block));
  }
  if (r.kv_memory_fraction > 1.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kv-cache-memory-fraction: must be in (0, 1], got ", r.kv_memory_fraction));
  }
  DeviceMemoryPlan p;
  p.free_bytes = r.free_bytes;
  p.weight_bytes = r.weight_bytes;
  p.workspace_bytes = r.workspace_bytes;
  p.reserve_bytes = r.reserve_bytes;
  p.kv_bytes_per_block = r.kv_bytes_per_block;
  const int64_t fixed = r.weight_bytes + r.workspace_bytes + r.reserve_bytes;
  if (fixed > r.free_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "device memory: weights ", human(r.weight_bytes), " + activation workspace ",
        human(r.workspace_bytes), " + reserve ", human(r.reserve_bytes), " exceed the free ",
        human(r.free_bytes), "; lower --max-num-batched-tokens or use a smaller model"));
  }
  p.available_for_kv = r.free_bytes - fixed;
  if (r.kv_memory_fraction > 0) {
    p.kv_budget_bytes = static_cast<int64_t>(static_cast<double>(p.available_for_kv) *
                                             r.kv_memory_fraction);
  } else {
    p.kv_budget_bytes = std::min(r.kv_memory_bytes, p.available_for_kv);
  }
  p.kv_blocks = p.kv_budget_bytes / r.kv_bytes_per_block;
  if (r.max_blocks > 0) p.kv_blocks = std::min(p.kv_blocks, r.max_blocks);
  if (p.kv_blocks < std::max<int64_t>(1, r.min_blocks)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "device memory: the KV budget ", human(p.kv_budget_bytes), " holds ", p.kv_blocks,
        " blocks of ", r.kv_bytes_per_block, " B but at least ", std::max<int64_t>(1, r.min_blocks),
        " are needed; raise --kv-cache-memory-fraction / --kv-cache-memory or lower "
        "--max-model-len"));
  }
  p.kv_bytes = p.kv_blocks * r.kv_bytes_per_block;
  return p;
}

std::string DeviceMemoryPlan::describe() const {
  return absl::StrCat("device memory plan:\n",
                      "  free at start         ", human(free_bytes), "\n",
                      "  weights               ", human(weight_bytes), "\n",
                      "  activation workspace  ", human(workspace_bytes), "\n",
                      "  reserve               ", human(reserve_bytes), "\n",
                      "  KV pool               ", human(kv_bytes), " = ", kv_blocks,
                      " blocks x ", kv_bytes_per_block, " B (budget ", human(kv_budget_bytes),
                      " of ", human(available_for_kv), " left)\n");
}

}  // namespace weft
