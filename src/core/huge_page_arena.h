// Memory on 2 MiB huge pages for the weights the CPU kernels stream every step: tensors placed
// side by side in chunks of anonymous memory aligned to 2 MiB and marked MADV_HUGEPAGE, so the
// kernel backs them with transparent huge pages where it allows them (THP "madvise" or "always";
// elsewhere 4 KiB pages, still correct). Why: with 4 KiB pages (a mapped file's page cache, or
// the heap) the hardware prefetchers stop at every page boundary and the TLB misses every
// 4 KiB. On the 2-core Zen 4, SmolLM2-135M Q8_0 batch-1 decode with int8 activations went from
// 139 to 178 tok/s (medians of 6 alternated runs) with its weights here; most of them are under
// 2 MiB (0.35-1.9 MB), too small for huge pages of their own.
// Each tensor keeps its chunk alive; a chunk is unmapped when its last tensor goes. The part of a
// chunk no tensor reached takes no memory (a mapping's pages exist once written), and a partial
// last huge page of a chunk stays 4 KiB pages. Under AddressSanitizer every chunk comes from the
// heap, so overflows stay caught.
#pragma once

#include <cstddef>
#include <memory>

#include "core/tensor.h"

namespace weft {

class HugePageArena {
 public:
  // Chunks of `chunk_bytes`; a tensor of half a chunk or more gets a chunk of its own, its size.
  explicit HugePageArena(size_t chunk_bytes = size_t{32} << 20) : chunk_bytes_(chunk_bytes) {}

  // An uninitialised tensor in the arena, 64-byte aligned (2 MiB aligned when it starts a chunk).
  // Throws std::bad_alloc when the system has no memory for a chunk.
  Tensor allocate(DType dtype, Shape shape);

 private:
  struct Chunk;

  size_t chunk_bytes_;
  std::shared_ptr<Chunk> chunk_;  // the chunk being filled; null before the first tensor
  size_t used_ = 0;
};

}  // namespace weft
