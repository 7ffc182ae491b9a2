#include "model/weight_slice.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace weft {

absl::StatusOr<WeightSlice> slice_weight(const Tensor& full, const std::string& name,
                                         const Shape& expected, int dim, int64_t begin,
                                         int64_t count) {
  const std::string where = absl::StrCat("slice of tensor '", name, "'");
  if (dim != 0 && dim != 1) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": dim must be 0 or 1, got ", dim));
  }
  if (dim >= expected.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": dim ", dim, " out of range for shape ", expected.to_string()));
  }
  if (begin < 0 || count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": begin (", begin, ") and count (", count, ") must be non-negative"));
  }
  const DType dtype = full.dtype();
  const int64_t size = expected[dim];
  const int64_t available = std::clamp<int64_t>(size - begin, 0, count);
  Shape out_shape = expected;
  out_shape[dim] = count;

  if (dim == 0) {
    const int64_t row_elems = expected.numel() / std::max<int64_t>(size, 1);
    const size_t row_bytes = dtype_nbytes(dtype, row_elems);
    const char* src = static_cast<const char*>(full.data()) +
                      static_cast<size_t>(std::min(begin, size)) * row_bytes;
    if (available == count) {
      // `full` holds the mapping alive; the slice shares that ownership through a copy of it.
      auto owner = std::make_shared<Tensor>(full);
      return WeightSlice{Tensor::wrap(const_cast<char*>(src), dtype, out_shape,
                                      std::static_pointer_cast<const void>(owner)),
                         false};
    }
    Tensor out = Tensor::zeros(dtype, out_shape);
    if (available > 0) std::memcpy(out.data(), src, static_cast<size_t>(available) * row_bytes);
    return WeightSlice{std::move(out), true};
  }

  int64_t inner = 1;
  for (int i = 2; i < expected.rank(); ++i) inner *= expected[i];
  const int64_t block = dtype_block_elems(dtype);
  if (block > 1 && (inner != 1 || begin % block != 0 || count % block != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " (", dtype_name(dtype), ", blocks of ", block, " elements along dim 1 of ",
        expected.to_string(), "): columns [", begin, ", ", begin + count,
        ") do not start and end on block edges; choose a tensor-parallel degree that splits ",
        size, " columns into multiples of ", block));
  }
  const int64_t outer = expected[0];
  // Bytes are whole elements or whole blocks along the row.
  const size_t src_row = dtype_nbytes(dtype, size * inner);
  const size_t dst_row = dtype_nbytes(dtype, count * inner);
  const size_t copy = dtype_nbytes(dtype, available * inner);
  const size_t skip = dtype_nbytes(dtype, begin * inner);
  Tensor out = Tensor::zeros(dtype, out_shape);
  const char* src = static_cast<const char*>(full.data());
  char* dst = static_cast<char*>(out.data());
  if (copy > 0) {
    for (int64_t r = 0; r < outer; ++r) {
      std::memcpy(dst + static_cast<size_t>(r) * dst_row,
                  src + static_cast<size_t>(r) * src_row + skip, copy);
    }
  }
  return WeightSlice{std::move(out), true};
}

}  // namespace weft
