// Tensors: a dense, contiguous, row-major block of elements of one dtype (for a block-quantized
// dtype, rows of whole blocks: core/dtype.h).
//
// `TensorView` is a non-owning (pointer, dtype, shape) triple: what kernels take.
// `Tensor` shares ownership of its storage (an aligned host allocation, a memory-mapped file,
// later device memory) and hands out views. Copying a Tensor copies the handle, not the data.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace weft {

enum class Device : uint8_t { kCpu, kCuda };

// Up to four dimensions; dims beyond rank are 1.
class Shape {
 public:
  static constexpr int kMaxRank = 4;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  // The first kMaxRank entries of `dims` (callers check the rank first).
  static Shape from_dims(const std::vector<int64_t>& dims);

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  int64_t numel() const;
  bool operator==(const Shape& other) const;
  // "[4, 8]"
  std::string to_string() const;

 private:
  std::array<int64_t, kMaxRank> dims_{1, 1, 1, 1};
  int rank_ = 0;
};

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Shape shape;
  Device device = Device::kCpu;

  int64_t numel() const { return shape.numel(); }
  size_t nbytes() const { return dtype_nbytes(dtype, numel()); }
  template <typename T>
  T* as() const { return static_cast<T*>(data); }
  // Rows [begin, begin + count) of dimension 0, as a view into the same memory.
  TensorView rows(int64_t begin, int64_t count) const;
  // The same memory seen with another shape of equal element count.
  TensorView reshaped(Shape new_shape) const;
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-filled, 64-byte aligned host memory.
  static Tensor zeros(DType dtype, Shape shape);
  // Allocates 64-byte aligned host memory without initialising it (for outputs kernels overwrite).
  static Tensor empty(DType dtype, Shape shape);
  // Wraps memory owned elsewhere; `keep_alive` (may be null) is held as long as the tensor.
  static Tensor wrap(void* data, DType dtype, Shape shape, std::shared_ptr<const void> keep_alive);

  bool defined() const { return view_.data != nullptr; }
  DType dtype() const { return view_.dtype; }
  const Shape& shape() const { return view_.shape; }
  int64_t dim(int i) const { return view_.shape[i]; }
  int64_t numel() const { return view_.numel(); }
  size_t nbytes() const { return view_.nbytes(); }
  void* data() const { return view_.data; }
  template <typename T>
  T* data_as() const { return static_cast<T*>(view_.data); }
  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }

 private:
  TensorView view_;
  std::shared_ptr<const void> owner_;
};

}  // namespace weft
