// A grammar compiled against one GrammarVocabulary: the grammar plus its per-state token mask
// cache. Immutable and shared: one compiled grammar serves every sequence whose spec has the same
// cache key (GrammarCompiler caches them), each through its own GrammarMatcher.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "constrain/grammar_spec.h"
#include "constrain/grammar_vocabulary.h"

namespace weft {

class CompiledGrammar {
 public:
  class Impl;
  CompiledGrammar(std::unique_ptr<Impl> impl, std::shared_ptr<const GrammarVocabulary> vocabulary,
                  GrammarKind kind, double compile_seconds);
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const std::shared_ptr<const GrammarVocabulary>& vocabulary() const { return vocabulary_; }
  GrammarKind kind() const { return kind_; }
  // Approximate bytes held (grammar and mask cache), as xgrammar counts them.
  size_t memory_bytes() const;
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
};

}  // namespace weft
