// Deciding when a sequence finishes, and which of its text may be streamed out yet.
//
// StopStringMatcher watches the detokenized text stream (deltas appended in order; stop strings
// may span any number of deltas). Each feed() returns the text that is safe to emit: everything
// except the longest suffix of the pending text that is a proper prefix of some stop string,
// which is held back until the next delta either completes the stop string or rules it out.
// When a stop string occurs, the text before its earliest occurrence is emitted and the stop
// string and everything after it are dropped (vLLM's default, include_stop_str_in_output=false).
// When several stop strings match, the one starting earliest wins (ties: the first listed).
//
// StopChecker applies the whole finish rule of one sequence, in vLLM's order, after each
// generated token:
//   1. fewer than min_tokens generated: never finish (stop strings are not matched either; the
//      text so far is emitted, so a stop string cannot begin before min_tokens is reached);
//   2. the token is an eos id (unless ignore_eos) or in stop_token_ids: finish "stop"; the
//      token's own text is not emitted (stop_token is set);
//   3. a stop string completes: finish "stop" (stop_string is set);
//   4. max_tokens generated: finish "length".
// On finishing, any held-back text that did not turn into a stop string is released.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/sampling_params.h"

namespace weft {

// Why a sequence ended. kAbort (the client went away or cancelled), kError and kContentFilter
// (banned phrases: every continuation was banned, or the sequence ran out of retries) are set by
// the engine, never by the StopChecker.
enum class FinishReason { kNone, kStop, kLength, kAbort, kError, kContentFilter };

// "stop", "length", "abort", "error", "content_filter" (the OpenAI finish_reason strings and
// ours); "" for kNone.
std::string_view finish_reason_name(FinishReason reason);

class StopStringMatcher {
 public:
  struct Result {
    std::string emit;                  // text safe to send now
    std::optional<size_t> stop_index;  // index into the stop list of the string that matched
  };

  explicit StopStringMatcher(std::vector<std::string> stops);

  // Appends `delta`. With `allow_match` false nothing is matched and nothing is held back.
  // After a match, further calls return nothing.
  Result feed(std::string_view delta, bool allow_match = true);
  // Releases the held-back text (the stream ended for another reason).
  std::string flush();

  const std::vector<std::string>& stops() const { return stops_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

class StopChecker {
 public:
  struct Step {
    std::string text;  // text to stream for this token (possibly empty: held back)
    FinishReason finish = FinishReason::kNone;
    std::optional<int32_t> stop_token;       // set when a stop token / eos finished the sequence
    std::optional<std::string> stop_string;  // set when a stop string finished the sequence
  };

  // Copies what it needs from `params` and `eos_token_ids`.
  StopChecker(const SamplingParams& params, std::span<const int32_t> eos_token_ids);

  // Call once per generated token, in order, with the text the detokenizer produced for it.
  // Calling again after a finish is a caller bug; it returns an empty kNone step.
  Step append(int32_t token, std::string_view text_delta);

  // The token part of the rule: how append(token) as output token number `n` (1-based) would
  // finish the sequence whatever its text -- rule 2 (kStop: a stop token or eos) or rule 4
  // (kLength) -- or kNone. Stop strings need the text and are not foreseen.
  FinishReason token_finish(int32_t token, int n) const;

  int num_output_tokens() const { return num_output_tokens_; }
  bool finished() const { return finished_; }

 private:
  StopStringMatcher matcher_;
  std::vector<int32_t> eos_token_ids_;
  std::vector<int32_t> stop_token_ids_;
  int min_tokens_;
  int max_tokens_;
  bool ignore_eos_;
  int num_output_tokens_ = 0;
  bool finished_ = false;
};

}  // namespace weft
