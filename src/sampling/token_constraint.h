// A constraint on which tokens a sequence may generate next (a grammar: JSON schema, regex,
// choice, EBNF; see src/constrain/), as the engine sees it: a per-sequence state that says which
// tokens may come next and advances with every token the sequence takes.
//
// Masks are bit rows: bit (id % 32) of word (id / 32) is 1 when token `id` is allowed, one row of
// ceil(vocab / 32) words (xgrammar's layout). The sampler sets the disallowed logits to -inf
// before any processing (SequenceSamplingState::allowed), so logprobs stay the raw ones.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"

namespace weft {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Writes the next-token mask into `row` (mask_words(vocab) words); false when every token is
  // allowed (the row then need not be applied).
  virtual absl::StatusOr<bool> fill_next_allowed(std::span<uint32_t> row) = 0;
  // Takes `token` when allowed (true); otherwise changes nothing and returns false.
  virtual bool accept(int32_t token) = 0;
  // Undoes the last `count` accepted tokens.
  virtual absl::Status rollback(int count) = 0;
  // An independent copy of the current state (n > 1).
  virtual std::unique_ptr<TokenConstraint> fork() const = 0;
  // The output is complete and a stop token was taken: nothing more may follow.
  virtual bool is_terminated() const = 0;
};

// What a request carries: where each of its sequences' constraints starts.
class TokenConstraintSource {
 public:
  virtual ~TokenConstraintSource() = default;
  virtual std::unique_ptr<TokenConstraint> start() const = 0;
};

inline int32_t mask_words(int64_t vocab) { return static_cast<int32_t>((vocab + 31) / 32); }

}  // namespace weft
