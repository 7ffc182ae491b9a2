#include "core/huge_page_arena.h"

#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace weft {
namespace {

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A copy of `t` in the arena.
Tensor copy(HugePageArena& arena, const Tensor& t) {
  Tensor out = arena.allocate(t.dtype(), t.shape());
  if (t.nbytes() > 0) std::memcpy(out.data(), t.data(), t.nbytes());
  return out;
}

Tensor iota_f32(int64_t n, float offset) {
  Tensor t = Tensor::empty(DType::kF32, Shape{n});
  std::iota(t.data_as<float>(), t.data_as<float>() + n, offset);
  return t;
}

TEST(HugePageArenaTest, ChunksStartOnAHugePage) {
#ifdef WEFT_SANITIZED  // tests/CMakeLists.txt: this file may be uninstrumented, the library not
  GTEST_SKIP() << "in sanitizer builds chunks may come from the heap";
#endif
  HugePageArena arena(size_t{4} << 20);
  const Tensor first = arena.allocate(DType::kU8, Shape{100});
  const Tensor own = arena.allocate(DType::kU8, Shape{(int64_t{3} << 20) + 5});  // a chunk of its own
  EXPECT_EQ(address(first.data()) % (size_t{2} << 20), 0u);
  EXPECT_EQ(address(own.data()) % (size_t{2} << 20), 0u);
  std::memset(own.data(), 1, own.nbytes());  // all of it writable
}

TEST(HugePageArenaTest, TensorsAreAlignedDisjointAndOutliveTheArena) {
  std::vector<Tensor> sources, copies;
  {
    // Chunks of 4 MiB: 100 tensors of 40-400 KB fill several.
    HugePageArena arena(size_t{4} << 20);
    for (int i = 0; i < 100; ++i) {
      sources.push_back(iota_f32(10'000 + 1'000 * (i % 91) + i, static_cast<float>(i)));
      copies.push_back(copy(arena, sources.back()));
    }
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    ASSERT_EQ(copies[i].dtype(), DType::kF32);
    ASSERT_EQ(copies[i].shape(), sources[i].shape());
    EXPECT_NE(copies[i].data(), sources[i].data());
    EXPECT_EQ(address(copies[i].data()) % 64, 0u);
    EXPECT_EQ(std::memcmp(copies[i].data(), sources[i].data(), sources[i].nbytes()), 0) << i;
  }
  // No two copies overlap.
  for (size_t i = 1; i < copies.size(); ++i) {
    const uintptr_t end = address(copies[i - 1].data()) + copies[i - 1].nbytes();
    const uintptr_t begin = address(copies[i].data());
    if (begin > address(copies[i - 1].data())) EXPECT_GE(begin, end) << i;
  }
}

TEST(HugePageArenaTest, TensorsOfHalfAChunkOrMoreGetTheirOwnAllocation) {
  HugePageArena arena(size_t{4} << 20);
  const Tensor small = arena.allocate(DType::kF32, Shape{1000});
  const Tensor big = arena.allocate(DType::kF32, Shape{(int64_t{2} << 20) / 4});
  // Not placed in small's chunk, right after it.
  EXPECT_NE(address(big.data()), address(small.data()) + 4032);
  const Tensor next = arena.allocate(DType::kF32, Shape{10});
  EXPECT_EQ(address(next.data()), address(small.data()) + 4032);
  const Tensor empty = arena.allocate(DType::kF32, Shape{0, 4});
  EXPECT_EQ(empty.shape(), (Shape{0, 4}));
}

}  // namespace
}  // namespace weft
