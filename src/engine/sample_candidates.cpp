#include "engine/sample_candidates.h"

#include <algorithm>
#include <cmath>

namespace weft {
namespace {

// Logit descending, ties to the lower id (the sampler's order); padding (id < 0) last.
struct Better {
  bool operator()(int32_t id_a, float a, int32_t id_b, float b) const {
    if ((id_a < 0) != (id_b < 0)) return id_b < 0;
    return a > b || (a == b && id_a < id_b);
  }
};

}  // namespace

void select_row_candidates(const float* row, int64_t valid, int64_t first_id, int32_t k,
                           int32_t* ids_out, float* logits_out) {
  const int64_t n = std::min<int64_t>(k, std::max<int64_t>(valid, 0));
  auto more = [row](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); };
  std::vector<int32_t> best;
  best.reserve(n);
  // A heap of the n best so far, its top the worst of them: most entries cost one comparison.
  for (int32_t i = 0; i < n; ++i) best.push_back(i);
  std::make_heap(best.begin(), best.end(), more);
  for (int64_t i = n; i < valid; ++i) {
    if (!(row[i] > row[best.front()])) continue;  // a tie keeps the lower id already held
    std::pop_heap(best.begin(), best.end(), more);
    best.back() = static_cast<int32_t>(i);
    std::push_heap(best.begin(), best.end(), more);
  }
  std::sort(best.begin(), best.end(), more);
  for (int32_t j = 0; j < k; ++j) {
    const bool real = j < n;
    ids_out[j] = real ? static_cast<int32_t>(first_id + best[j]) : -1;
    logits_out[j] = real ? row[best[j]] : -INFINITY;
  }
}

SampleCandidates merge_candidates(const std::vector<int32_t>& ids, const std::vector<float>& logits,
                                  int num_parts, int64_t rows, int32_t k) {
  SampleCandidates out;
  out.per_row = k;
  out.ids.resize(rows * k);
  out.logits.resize(rows * k);
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(num_parts) * k);
  for (int64_t r = 0; r < rows; ++r) {
    order.clear();
    for (int p = 0; p < num_parts; ++p) {
      for (int32_t j = 0; j < k; ++j) order.push_back((p * rows + r) * k + j);
    }
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
      return Better{}(ids[a], logits[a], ids[b], logits[b]);
    });
    for (int32_t j = 0; j < k; ++j) {
      out.ids[r * k + j] = ids[order[j]];
      out.logits[r * k + j] = logits[order[j]];
    }
  }
  return out;
}

std::pair<float, float> logsumexp_part(const float* row, int64_t valid) {
  if (valid <= 0) return {-INFINITY, 0.0f};
  const float max = *std::max_element(row, row + valid);
  if (!(max > -INFINITY)) return {-INFINITY, 0.0f};
  double sum = 0.0;
  for (int64_t i = 0; i < valid; ++i) sum += std::exp(static_cast<double>(row[i]) - max);
  return {max, static_cast<float>(sum)};
}

float combine_logsumexp(const std::vector<std::pair<float, float>>& parts) {
  float max = -INFINITY;
  for (const auto& [m, s] : parts) max = std::max(max, m);
  if (!(max > -INFINITY)) return -INFINITY;
  double sum = 0.0;
  for (const auto& [m, s] : parts) {
    if (m > -INFINITY) sum += static_cast<double>(s) * std::exp(static_cast<double>(m) - max);
  }
  return static_cast<float>(max + std::log(sum));
}

Tensor expand_candidates(const SampleCandidates& candidates, const std::vector<int64_t>& rows,
                         int64_t vocab) {
  Tensor out = Tensor::empty(DType::kF32, Shape{static_cast<int64_t>(rows.size()), vocab});
  float* p = out.data_as<float>();
  std::fill(p, p + out.numel(), -INFINITY);
  const int32_t k = candidates.per_row;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int32_t j = 0; j < k; ++j) {
      const int32_t id = candidates.ids[rows[i] * k + j];
      if (id >= 0 && id < vocab) p[i * vocab + id] = candidates.logits[rows[i] * k + j];
    }
  }
  return out;
}

}  // namespace weft
