#include "sampling/stop_checker.h"

#include <algorithm>

namespace weft {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
    case FinishReason::kContentFilter:
      return "content_filter";
    case FinishReason::kNone:
      break;
  }
  return "";
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopStringMatcher::Result StopStringMatcher::feed(std::string_view delta, bool allow_match) {
  Result r;
  if (stopped_) return r;
  held_.append(delta);
  if (!allow_match || stops_.empty()) {
    r.emit = std::move(held_);
    held_.clear();
    return r;
  }
  // Every emitted byte was ruled out as the start of a stop string, so a match starts in the
  // pending text; the earliest one wins.
  size_t best_pos = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t pos = held_.find(stops_[i]);
    if (pos < best_pos) {
      best_pos = pos;
      r.stop_index = i;
    }
  }
  if (r.stop_index.has_value()) {
    r.emit = held_.substr(0, best_pos);
    held_.clear();
    stopped_ = true;
    return r;
  }
  // Hold back the longest suffix that some stop string could still complete.
  size_t hold = 0;
  for (const std::string& stop : stops_) {
    const size_t max_len = std::min(held_.size(), stop.size() - 1);
    for (size_t len = max_len; len > hold; --len) {
      if (std::string_view(held_).substr(held_.size() - len) ==
          std::string_view(stop).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  r.emit = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return r;
}

std::string StopStringMatcher::flush() {
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

StopChecker::StopChecker(const SamplingParams& params, std::span<const int32_t> eos_token_ids)
    : matcher_(params.stop),
      eos_token_ids_(eos_token_ids.begin(), eos_token_ids.end()),
      stop_token_ids_(params.stop_token_ids),
      min_tokens_(params.min_tokens),
      max_tokens_(params.max_tokens),
      ignore_eos_(params.ignore_eos) {}

FinishReason StopChecker::token_finish(int32_t token, int n) const {
  if (n < min_tokens_) return FinishReason::kNone;
  auto contains = [token](const std::vector<int32_t>& ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  if ((!ignore_eos_ && contains(eos_token_ids_)) || contains(stop_token_ids_)) return FinishReason::kStop;
  return n >= max_tokens_ ? FinishReason::kLength : FinishReason::kNone;
}

StopChecker::Step StopChecker::append(int32_t token, std::string_view text_delta) {
  Step step;
  if (finished_) return step;
  ++num_output_tokens_;
  if (num_output_tokens_ < min_tokens_) {
    step.text = matcher_.feed(text_delta, /*allow_match=*/false).emit;
    return step;
  }
  if (token_finish(token, num_output_tokens_) == FinishReason::kStop) {
    step.text = matcher_.flush();
    step.finish = FinishReason::kStop;
    step.stop_token = token;
    finished_ = true;
    return step;
  }
  StopStringMatcher::Result r = matcher_.feed(text_delta);
  step.text = std::move(r.emit);
  if (r.stop_index.has_value()) {
    step.finish = FinishReason::kStop;
    step.stop_string = matcher_.stops()[*r.stop_index];
    finished_ = true;
    return step;
  }
  if (num_output_tokens_ >= max_tokens_) {
    step.text += matcher_.flush();
    step.finish = FinishReason::kLength;
    finished_ = true;
  }
  return step;
}

}  // namespace weft
