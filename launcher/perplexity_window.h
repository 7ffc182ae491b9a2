// The sliding-window perplexity method: which tokens each window runs and which of them it scores.
//
// Windows of at most `context` tokens start every `stride` tokens (begin = 0, stride, 2 stride,
// ...) until one reaches the end of the text. Window [begin, end) scores the tokens
// [max(previous end, begin + 1), end): a token is scored at most once, and only with at least
// one token of history inside its window. With stride < context every token after the first is
// scored, with at least context - stride tokens of history once past the first window; with
// stride == context the windows do not overlap and each window's first token goes unscored.
// Perplexity = exp(sum of -log p(token) / number of scored tokens).
//
// This is the method of the Hugging Face perplexity guide, with one difference: the guide weights
// each window's mean loss by (scored tokens - 1), an approximation; here every scored token
// counts once, so the result is the true per-token perplexity.
#pragma once

#include <cstdint>
#include <vector>

namespace weft {

struct PerplexityWindow {
  int64_t begin = 0;        // first token the window runs
  int64_t end = 0;          // one past its last token
  int64_t first_scored = 0; // first token it scores; it scores [first_scored, end)
};

// Requires 1 <= stride <= context and num_tokens >= 2.
std::vector<PerplexityWindow> perplexity_windows(int64_t num_tokens, int64_t context, int64_t stride);

}  // namespace weft
