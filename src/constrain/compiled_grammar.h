// A grammar compiled against one GrammarVocabulary: the grammar plus its per-state token mask
// cache. Immutable and shared: one compiled grammar serves every sequence whose spec has the same
// cache key (GrammarCompiler caches them), each through its own GrammarMatcher.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "constrain/grammar_spec.h"
#include "constrain/grammar_vocabulary.h"
#include "constrain/json_whitespace_bound.h"
#include "constrain/mask_cache.h"

namespace weft {

class CompiledGrammar {
 public:
  class Impl;
  // `whitespace_bound`: the run-time bound of a JsonWhitespace::kBounded spec, whose grammar
  // then has unbounded whitespace (json_whitespace_bound.h); null otherwise.
  // `mask_cache_bytes`: the bound of mask_cache() (0: no cache); `mask_cache_min_fill_seconds`:
  // its threshold (MaskCache::worth_storing).
  CompiledGrammar(std::unique_ptr<Impl> impl, std::shared_ptr<const GrammarVocabulary> vocabulary,
                  GrammarKind kind, double compile_seconds,
                  std::shared_ptr<const JsonWhitespaceBound> whitespace_bound = nullptr,
                  size_t mask_cache_bytes = 0,
                  double mask_cache_min_fill_seconds = MaskCache::kDefaultMinFillSeconds);
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const std::shared_ptr<const GrammarVocabulary>& vocabulary() const { return vocabulary_; }
  GrammarKind kind() const { return kind_; }
  const std::shared_ptr<const JsonWhitespaceBound>& whitespace_bound() const {
    return whitespace_bound_;
  }
  // Approximate bytes held: the grammar and its per-state token classes as xgrammar counts them,
  // plus the bound of mask_cache() (which fills as requests run). The whitespace bound is not
  // counted: one table serves every grammar of a compiler with that bound.
  size_t memory_bytes() const;
  // Filled masks of the slow parser states, shared by every matcher of this grammar (a memo:
  // using it does not change what the grammar allows). Null when the bound is 0.
  MaskCache* mask_cache() const { return mask_cache_.get(); }
  // Wall time the compile took (the schema/regex conversion and the mask cache).
  double compile_seconds() const { return compile_seconds_; }
  // The grammar in xgrammar's EBNF (debugging, tests).
  std::string grammar_text() const;

  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<const GrammarVocabulary> vocabulary_;
  GrammarKind kind_;
  double compile_seconds_;
  std::shared_ptr<const JsonWhitespaceBound> whitespace_bound_;
  std::unique_ptr<MaskCache> mask_cache_;
};

}  // namespace weft
