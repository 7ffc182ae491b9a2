// The slicing behind WeightStore::get_slice, on a tensor already read (any storage backend's):
// rows or columns of a weight for this rank's tensor-parallel shard, block-quantized dtypes
// included.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace weft {

struct WeightSlice {
  Tensor tensor;
  // True when `tensor` is a copy: the caller may then release `full`'s pages.
  bool copied = false;
};

// Rows [begin, begin + count) along dimension `dim` (0 or 1) of `full`, the tensor `name` of
// shape `expected`. dim 0 inside the tensor is a zero-copy view sharing full's ownership; dim 1,
// or a dim-0 range running past the end (padding of uneven TP splits), is a zero-filled copy.
// Block-quantized dtypes (core/dtype.h) cut along dim 1 only at block edges: begin and count
// must be multiples of the block, else an InvalidArgument naming the tensor, its dtype, the
// block and the range (never a silent mis-slice); dim-0 rows are whole blocks already.
// Errors also: dim not 0 or 1 or not below the rank; negative begin or count.
absl::StatusOr<WeightSlice> slice_weight(const Tensor& full, const std::string& name,
                                         const Shape& expected, int dim, int64_t begin,
                                         int64_t count);

}  // namespace weft
