#include "core/huge_page_arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>

namespace weft {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kHeapOnly = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kHeapOnly = true;
#else
constexpr bool kHeapOnly = false;
#endif
#else
constexpr bool kHeapOnly = false;
#endif

constexpr size_t kHugePage = size_t{2} << 20;

size_t rounded_to(size_t bytes, size_t unit) { return (bytes + unit - 1) / unit * unit; }

}  // namespace

// `bytes` of memory, 2 MiB aligned, its whole huge pages advised as such.
struct HugePageArena::Chunk {
  explicit Chunk(size_t size) : bytes(size) {
    if (kHeapOnly) {
      data = static_cast<uint8_t*>(std::aligned_alloc(64, rounded_to(bytes == 0 ? 1 : bytes, 64)));
      if (data == nullptr) throw std::bad_alloc();
      return;
    }
    // A huge page more than asked, then the ends outside the 2 MiB-aligned span unmapped.
    const size_t length = rounded_to(bytes == 0 ? 1 : bytes, kHugePage);
    void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t begin = reinterpret_cast<uintptr_t>(raw), end = begin + length + kHugePage;
    const uintptr_t aligned = rounded_to(begin, kHugePage);
    if (aligned > begin) munmap(raw, aligned - begin);
    if (end > aligned + length) munmap(reinterpret_cast<void*>(aligned + length), end - (aligned + length));
    data = reinterpret_cast<uint8_t*>(aligned);
    mapped = length;
    // Advice only. Not the partial last huge page: touched, it would take 2 MiB for a few bytes.
    madvise(data, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
  }
  ~Chunk() {
    if (kHeapOnly) {
      std::free(data);
    } else {
      munmap(data, mapped);
    }
  }
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;

  uint8_t* data = nullptr;
  size_t bytes = 0;
  size_t mapped = 0;
};

Tensor HugePageArena::allocate(DType dtype, Shape shape) {
  const size_t bytes = dtype_nbytes(dtype, shape.numel());
  if (bytes >= chunk_bytes_ / 2) {
    auto own = std::make_shared<Chunk>(bytes);
    return Tensor::wrap(own->data, dtype, shape, own);
  }
  if (chunk_ == nullptr || used_ + bytes > chunk_->bytes) {
    chunk_ = std::make_shared<Chunk>(chunk_bytes_);
    used_ = 0;
  }
  uint8_t* at = chunk_->data + used_;
  used_ = rounded_to(used_ + bytes, 64);
  return Tensor::wrap(at, dtype, shape, chunk_);
}

}  // namespace weft
