#include "core/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft {

Shape::Shape(std::initializer_list<int64_t> dims) {
  rank_ = static_cast<int>(dims.size());
  int i = 0;
  for (int64_t d : dims) dims_[i++] = d;
}

Shape Shape::from_dims(const std::vector<int64_t>& dims) {
  Shape s;
  s.rank_ = static_cast<int>(std::min<size_t>(dims.size(), kMaxRank));
  for (int i = 0; i < s.rank_; ++i) s.dims_[i] = dims[i];
  return s;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

std::string Shape::to_string() const {
  std::string out = "[";
  for (int i = 0; i < rank_; ++i) absl::StrAppend(&out, i ? ", " : "", dims_[i]);
  return out + "]";
}

TensorView TensorView::rows(int64_t begin, int64_t count) const {
  TensorView out = *this;
  const int64_t row_elems = shape.rank() > 0 ? numel() / shape[0] : 1;
  out.data = static_cast<char*>(data) + dtype_nbytes(dtype, begin * row_elems);
  out.shape[0] = count;
  return out;
}

TensorView TensorView::reshaped(Shape new_shape) const {
  TensorView out = *this;
  out.shape = new_shape;
  return out;
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  Tensor t;
  const size_t bytes = dtype_nbytes(dtype, shape.numel());
  const size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  t.owner_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.view_ = TensorView{p, dtype, shape, Device::kCpu};
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, shape);
  std::memset(t.data(), 0, t.nbytes());
  return t;
}

Tensor Tensor::wrap(void* data, DType dtype, Shape shape, std::shared_ptr<const void> keep_alive) {
  Tensor t;
  t.owner_ = std::move(keep_alive);
  t.view_ = TensorView{data, dtype, shape, Device::kCpu};
  return t;
}

}  // namespace weft
