#include "constrain/compiled_grammar.h"

#include <utility>

#include "constrain/xgrammar_bridge.h"

namespace weft {

CompiledGrammar::CompiledGrammar(std::unique_ptr<Impl> impl,
                                 std::shared_ptr<const GrammarVocabulary> vocabulary,
                                 GrammarKind kind, double compile_seconds,
                                 std::shared_ptr<const JsonWhitespaceBound> whitespace_bound,
                                 size_t mask_cache_bytes, double mask_cache_min_fill_seconds)
    : impl_(std::move(impl)),
      vocabulary_(std::move(vocabulary)),
      kind_(kind),
      compile_seconds_(compile_seconds),
      whitespace_bound_(std::move(whitespace_bound)),
      mask_cache_(mask_cache_bytes > 0
                      ? std::make_unique<MaskCache>(mask_cache_bytes, mask_cache_min_fill_seconds)
                      : nullptr) {}

CompiledGrammar::~CompiledGrammar() = default;

size_t CompiledGrammar::memory_bytes() const {
  return impl_->compiled.MemorySizeBytes() + (mask_cache_ ? mask_cache_->max_bytes() : 0);
}

std::string CompiledGrammar::grammar_text() const {
  return impl_->compiled.GetGrammar().ToString();
}

}  // namespace weft
