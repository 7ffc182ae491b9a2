#include "model/layers/load_context.h"

#include <algorithm>
#include <cstring>

namespace weft {

Tensor held_weight(const LoadContext& ctx, Tensor t) {
  if (ctx.mmap_weights || ctx.arena == nullptr || !t.defined()) return t;
  const bool mapped = ctx.weights.is_mapped(t);
  Tensor held = ctx.arena->allocate(t.dtype(), t.shape());
  // 2 MiB at a time, each mapped piece released once copied: the weight is resident once, not
  // twice, while it moves (a 32 MB LM head would otherwise be for a moment).
  constexpr size_t kPiece = size_t{2} << 20;
  const char* from = static_cast<const char*>(t.data());
  char* to = static_cast<char*>(held.data());
  for (size_t done = 0; done < t.nbytes(); done += kPiece) {
    const size_t piece = std::min(kPiece, t.nbytes() - done);
    std::memcpy(to + done, from + done, piece);
    if (mapped) ctx.weights.release(from + done, piece);
  }
  // The pages that straddled two pieces.
  if (mapped) ctx.weights.release(t);
  return held;
}

}  // namespace weft
