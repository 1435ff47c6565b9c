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
};

}  // namespace hybridfd
