// The engine's IncrementalDetokenizer over a Hugging Face tokenizer (tokenizer/).
#pragma once

#include <memory>

#include "engine/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace weft {

// Detokenizers that decode each sequence's output in the context of its prompt's last tokens, so
// the first generated token keeps its leading space (sentencepiece-style decoders strip the
// space of the first token of a text).
DetokenizerFactory text_detokenizers(std::shared_ptr<const Tokenizer> tokenizer);

}  // namespace weft
