// Compiles GrammarSpecs against one vocabulary, with a cache of compiled grammars keyed by the
// spec's cache key (GrammarSpec::cache_key, hashed), bounded in bytes and evicted least recently
// used. Thread-safe: request handlers may compile concurrently; concurrent compiles of one key
// run once and share the result. Each compile is bounded by GrammarLimits (size, depth, time,
// memory) so a hostile spec costs an InvalidArgument, never a stuck caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "constrain/compiled_grammar.h"
#include "constrain/grammar_limits.h"
#include "constrain/grammar_spec.h"
#include "constrain/grammar_vocabulary.h"

namespace weft {

struct GrammarCompilerOptions {
  GrammarLimits limits;
  // Threads one compile spreads the mask cache over (xgrammar's own pool); 1 = the compile's
  // own thread only.
  int threads = 1;
  // Bytes of compiled grammars kept (CompiledGrammar::memory_bytes); 0 disables the cache.
  size_t cache_bytes = size_t{1} << 30;
  // Per compiled grammar: bytes of filled masks kept for its slow parser states
  // (CompiledGrammar::mask_cache; mask_cache.h); 0 disables it. The default holds about 200 rows
  // of a 151k-token vocabulary.
  size_t mask_cache_bytes = size_t{4} << 20;
  // Fills faster than this are not stored in the mask cache (MaskCache::worth_storing); tests
  // set 0 to store every fill that has a key.
  double mask_cache_min_fill_seconds = MaskCache::kDefaultMinFillSeconds;
};

struct GrammarCompilerStats {
  int64_t hits = 0;       // compile() served from the cache (or a compile already running)
  int64_t misses = 0;     // compile() that compiled
  int64_t failures = 0;   // compiles that ended in an error (timeouts included)
  int64_t timeouts = 0;   // compiles abandoned past max_compile_seconds
  int64_t evictions = 0;  // grammars dropped from the cache for space
  int64_t cached_grammars = 0;
  size_t cached_bytes = 0;
  int32_t abandoned_running = 0;  // abandoned compiles still running on their threads
};

class GrammarCompiler {
 public:
  explicit GrammarCompiler(std::shared_ptr<const GrammarVocabulary> vocabulary,
                           GrammarCompilerOptions options = {});
  ~GrammarCompiler();
  GrammarCompiler(const GrammarCompiler&) = delete;
  GrammarCompiler& operator=(const GrammarCompiler&) = delete;

  // The compiled grammar of `spec`, from the cache or compiled now (blocking, up to
  // limits.max_compile_seconds). Errors, each starting with spec.parameter():
  // InvalidArgument for a spec that does not parse (schema, regex, grammar, structural tag) or
  // exceeds a limit (size, depth, grammar size, compile time, compiled memory);
  // ResourceExhausted while max_abandoned_compiles abandoned compiles are still running.
  // Errors are not cached, except that a spec whose compile timed out is refused at once
  // afterwards.
  absl::StatusOr<std::shared_ptr<const CompiledGrammar>> compile(const GrammarSpec& spec);

  const std::shared_ptr<const GrammarVocabulary>& vocabulary() const { return vocabulary_; }
  const GrammarCompilerOptions& options() const { return options_; }
  GrammarCompilerStats stats() const;
  // Drops every cached grammar (matchers holding one keep it alive).
  void clear_cache();

  class State;

 private:
  std::shared_ptr<const GrammarVocabulary> vocabulary_;
  GrammarCompilerOptions options_;
  std::shared_ptr<State> state_;
};

}  // namespace weft
