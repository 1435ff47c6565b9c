// numpy arrays as the core's checked views (ArrayRef), for the modules that pass arrays
// to it (hybridfd._core and hybridfd._probes).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <hybridfd/array_ref.hpp>
#include <hybridfd/errors.hpp>
#include <string>
#include <utility>

namespace hybridfd_bindings {

namespace nb = nanobind;

using Array = nb::ndarray<nb::ro, nb::device::cpu>;

inline std::string dtype_name(const nb::dlpack::dtype& type) {
  const char* kind = "unknown";
  switch (static_cast<nb::dlpack::dtype_code>(type.code)) {
    case nb::dlpack::dtype_code::Int: kind = "int"; break;
    case nb::dlpack::dtype_code::UInt: kind = "uint"; break;
    case nb::dlpack::dtype_code::Float: kind = "float"; break;
    case nb::dlpack::dtype_code::Complex: kind = "complex"; break;
    case nb::dlpack::dtype_code::Bool: return "bool";
    default: break;
  }
  return kind + std::to_string(type.bits);
}

// The caller keeps `dtype` alive as long as the returned view.
inline hybridfd::ArrayRef view(const Array& array, const std::string& dtype, bool writable) {
  hybridfd::ArrayRef ref;
  ref.data = array.data();
  ref.dtype = dtype;
  ref.ndim = static_cast<int>(array.ndim());
  ref.writable = writable;
  const std::int64_t item = array.dtype().bits / 8;
  for (int axis = 0; axis < std::min(ref.ndim, hybridfd::ArrayRef::max_dims); ++axis) {
    ref.shape[axis] = static_cast<std::int64_t>(array.shape(axis));
    ref.strides[axis] = array.stride(axis) * item;
  }
  return ref;
}

// Both arrays of an apply as checked views; the dtype names live in `names`.
inline std::pair<hybridfd::ArrayRef, hybridfd::ArrayRef> views(const Array& in, const Array& out, bool out_writable,
                                                               std::array<std::string, 2>& names) {
  names = {dtype_name(in.dtype()), dtype_name(out.dtype())};
  return {view(in, names[0], true), view(out, names[1], out_writable)};
}

// hybridfd::TypeError as Python's TypeError (ValueError, a std::invalid_argument, is
// nanobind's ValueError already).
inline void translate_type_errors() {
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const hybridfd::TypeError& type_error) {
      PyErr_SetString(PyExc_TypeError, type_error.what());
    }
  });
}

}  // namespace hybridfd_bindings
