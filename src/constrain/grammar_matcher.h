// Per-sequence state of a constraint: which tokens may come next under a compiled grammar, as
// the sequence's tokens are accepted. One matcher per sequence, owned by the coordinator's
// per-sequence state; not thread-safe (fill_next_token_bitmasks may work on distinct matchers
// from several threads at once).
//
// Life of a matcher in the step loop: fill the next-token mask, sample under it, accept the
// sampled token. Speculative decoding accepts the draft tokens that pass and rolls back the rest;
// preemption with recompute keeps the matcher (or rolls back to the recomputed length).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "constrain/compiled_grammar.h"
#include "constrain/token_bitmask.h"

namespace weft {

class ThreadPool;

class GrammarMatcher {
 public:
  // A matcher at the start of `grammar`'s output. The stop tokens are the vocabulary's.
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  // Advances by `token` when the grammar allows it (true); otherwise leaves the state unchanged
  // and returns false. A stop token is allowed exactly where the output is complete and
  // terminates the matcher. Nothing is accepted after termination (false).
  bool accept_token(int32_t token);
  // Accepts `tokens` in order up to the first one the grammar refuses; returns how many were
  // accepted (tokens.size() when all were). The way to verify a speculative draft.
  size_t accept_tokens(std::span<const int32_t> tokens);

  // Writes the next-token mask into `row` (vocab_size bits, see token_bitmask.h). Returns false
  // when every token is allowed (the row then need not be applied). After termination the row
  // allows only the stop tokens. A state whose fill is slow is looked up in, and stored into,
  // the grammar's mask cache (mask_cache.h), which any matcher of the grammar may share; the row
  // is the same either way. Error: InvalidArgument when `row` does not have
  // bitmask_words(vocab_size()) words.
  absl::StatusOr<bool> fill_next_token_bitmask(std::span<uint32_t> row);

  // Undoes the last `tokens` accepted tokens (termination included). Error: InvalidArgument when
  // `tokens` is negative or more than tokens_accepted().
  absl::Status rollback(int32_t tokens);

  // The stop token has been accepted.
  bool is_terminated() const;
  // The output so far is a complete match (a stop token would be allowed now).
  bool is_completed() const;
  // Tokens accepted since the start (or the last reset), minus those rolled back.
  int32_t tokens_accepted() const { return tokens_accepted_; }
  // Back to the start of the grammar.
  void reset();
  // An independent copy of this matcher's state sharing the compiled grammar (n > 1 sampling,
  // draft trees).
  GrammarMatcher fork() const;
  // The bytes every continuation must start with from here (jump-forward decoding); does not
  // change the state.
  std::string forced_continuation();

  const std::shared_ptr<const CompiledGrammar>& grammar() const { return grammar_; }
  int32_t vocab_size() const { return grammar_->vocabulary()->vocab_size(); }

  class Impl;
  Impl& impl() { return *impl_; }

 private:
  GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::unique_ptr<Impl> impl,
                 int32_t tokens_accepted, std::vector<JsonLexState> lex_states);
  std::shared_ptr<const CompiledGrammar> grammar_;
  std::unique_ptr<Impl> impl_;
  int32_t tokens_accepted_ = 0;
  // With a run-time whitespace bound (CompiledGrammar::whitespace_bound): the lexer state at the
  // start and after each accepted token, so back() is the current one and rollback pops.
  std::vector<JsonLexState> lex_states_;
};

// Fills row rows[i] of `mask` from matchers[i] (rows empty: row i) for a batch of sequences;
// null matchers (unconstrained sequences) get an all-allowed row. With a pool, the matchers are
// spread over its threads (distinct matchers, distinct rows); without one, they run inline.
// Errors: InvalidArgument when sizes disagree, a row index is out of range or repeated, or a
// matcher's vocabulary size differs from the mask's.
absl::Status fill_next_token_bitmasks(std::span<GrammarMatcher* const> matchers, TokenBitmask& mask,
                                      std::span<const int32_t> rows = {},
                                      ThreadPool* pool = nullptr);

}  // namespace weft
