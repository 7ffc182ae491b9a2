// Fuzzes the rank-to-rank protobuf decoders (decode_step_plan, decode_step_result,
// decode_control) on arbitrary bytes. Properties: no crash, no absurd allocation, and whatever
// decodes re-encodes to bytes that decode to the same value.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "engine/step_plan_codec.h"
#include "fuzz_util.h"

namespace {

bool same_plan(const weft::StepPlan& a, const weft::StepPlan& b) {
  if (a.step_id != b.step_id || a.sample_candidates != b.sample_candidates ||
      a.candidate_logsumexp != b.candidate_logsumexp ||
      a.chunks.size() != b.chunks.size()) {
    return false;
  }
  for (size_t i = 0; i < a.chunks.size(); ++i) {
    const auto& x = a.chunks[i];
    const auto& y = b.chunks[i];
    if (x.seq_id != y.seq_id || x.token_ids != y.token_ids ||
        x.start_position != y.start_position || x.block_table != y.block_table ||
        x.logits != y.logits) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  auto plan = weft::decode_step_plan(bytes);
  if (plan.ok()) {
    auto again = weft::decode_step_plan(weft::encode_step_plan(*plan));
    WEFT_FUZZ_CHECK(again.ok());
    WEFT_FUZZ_CHECK(same_plan(*plan, *again));
    (void)weft::check_step_plan(*plan, weft::PlanLimits{32000, 64, 16});
  }

  auto result = weft::decode_step_result(bytes);
  if (result.ok()) {
    auto again = weft::decode_step_result(weft::encode_step_result(*result));
    WEFT_FUZZ_CHECK(again.ok());
    WEFT_FUZZ_CHECK(again->step_id == result->step_id);
    WEFT_FUZZ_CHECK(again->error == result->error);
    WEFT_FUZZ_CHECK(again->sampled.size() == result->sampled.size());
    WEFT_FUZZ_CHECK(again->candidates.per_row == result->candidates.per_row);
    WEFT_FUZZ_CHECK(again->candidates.ids == result->candidates.ids);
    WEFT_FUZZ_CHECK(again->candidates.logits.size() == result->candidates.logits.size());
    WEFT_FUZZ_CHECK(again->candidates.logsumexp.size() == result->candidates.logsumexp.size());
    WEFT_FUZZ_CHECK(again->logits.defined() == result->logits.defined());
    if (result->logits.defined()) {
      WEFT_FUZZ_CHECK(again->logits.nbytes() == result->logits.nbytes());
      WEFT_FUZZ_CHECK(std::memcmp(again->logits.data(), result->logits.data(),
                                  result->logits.nbytes()) == 0);
    }
  }

  auto control = weft::decode_control(bytes);
  if (control.ok()) {
    auto again = weft::decode_control(weft::encode_control(*control));
    WEFT_FUZZ_CHECK(again.ok());
    WEFT_FUZZ_CHECK(again->kind == control->kind);
    if (control->kind == weft::ControlKind::kStep) WEFT_FUZZ_CHECK(same_plan(control->plan, again->plan));
  }
  return 0;
}
