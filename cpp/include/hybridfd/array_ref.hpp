// ArrayRef: a caller's array (numpy or C++) as the core checks and uses it.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace hybridfd {

// A view of a caller's array, checked before use. Strides are in bytes; only the first
// max_dims axes of an array with more are stored (it is rejected anyway).
struct ArrayRef {
  static constexpr int max_dims = 8;
  const void* data = nullptr;
  std::string_view dtype;  // numpy's name, e.g. "float64", "complex128", "float32"
  int ndim = 0;
  std::array<std::int64_t, max_dims> shape{};
  std::array<std::int64_t, max_dims> strides{};
  bool writable = true;

  // C order with no gaps for items of `item_bytes`. Axes of length 1 may have any
  // stride, and an empty array has no layout to check (numpy gives it zero strides).
  bool c_contiguous(std::int64_t item_bytes) const {
    for (int axis = 0; axis < ndim && axis < max_dims; ++axis)
      if (shape[axis] == 0) return true;
    std::int64_t expected = item_bytes;
    for (int axis = (ndim < max_dims ? ndim : max_dims) - 1; axis >= 0; --axis) {
      if (shape[axis] > 1 && strides[axis] != expected) return false;
      expected *= shape[axis];
    }
    return true;
  }
};

}  // namespace hybridfd
