#include "launcher/perplexity_window.h"

#include <algorithm>

namespace weft {

std::vector<PerplexityWindow> perplexity_windows(int64_t num_tokens, int64_t context, int64_t stride) {
  std::vector<PerplexityWindow> windows;
  int64_t previous_end = 0;
  for (int64_t begin = 0; begin < num_tokens; begin += stride) {
    PerplexityWindow w;
    w.begin = begin;
    w.end = std::min(begin + context, num_tokens);
    w.first_scored = std::max(previous_end, begin + 1);
    if (w.first_scored < w.end) windows.push_back(w);
    previous_end = w.end;
    if (w.end == num_tokens) break;
  }
  return windows;
}

}  // namespace weft
