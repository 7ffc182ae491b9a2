// The BPE merges a sentencepiece vocabulary implies, for GGUF files that store a sentencepiece
// model as tokens and scores without merges (tokenizer.ggml.model "llama": Llama 2, Mistral,
// TinyLlama). Derived exactly as transformers derives them (tokenization_utils_base.py,
// generate_merges with vocab scores), so that weft tokenizes such a file as transformers does:
// - every split of a token into a left and a right part (at character boundaries) that are both
//   tokens of the vocabulary is a merge, ranked by the whole token's score;
// - a higher score ranks first; equal scores rank the longer left part first, then the longer
//   right part; still equal, the order they were found in: tokens in file order (a token listed
//   twice counts at its first place, with its last score), each token's splits ordered by the ids
//   of their parts (a part listed twice has its last id).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace weft {

std::vector<std::pair<std::string, std::string>> sentencepiece_merges(
    const std::vector<std::string>& tokens, const std::vector<double>& scores);

}  // namespace weft
