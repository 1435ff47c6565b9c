// nanobind module hybridfd._probes: the benchmark probes (probes.hpp), apart from the
// library's own module. The stencil a kernel timing takes is hybridfd._core's Stencil
// (import hybridfd first).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <array>
#include <string>
#include <tuple>

#include "../bindings/array_views.hpp"
#include "probes.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using Values = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using Target = nb::ndarray<double, nb::c_contig, nb::device::cpu>;

void check_same_size(const char* name, const Values& source, const Target& target) {
  if (source.size() != target.size())
    throw hybridfd::ValueError(std::string(name) + ": source has " + std::to_string(source.size()) +
                               " values, target " + std::to_string(target.size()));
}

}  // namespace

NB_MODULE(_probes, m) {
  hybridfd_bindings::translate_type_errors();

  m.def(
      "stream_copy",
      [](const Values& source, const Target& target, int threads) {
        check_same_size("stream_copy", source, target);
        nb::gil_scoped_release release;
        hybridfd::stream_copy(source.data(), target.data(), static_cast<std::int64_t>(source.size()), threads);
      },
      "source"_a, "target"_a, "threads"_a = 1,
      "STREAM Copy of float64 arrays (view complex128 as float64), in one contiguous part per thread.");
  m.def(
      "copy_seconds",
      [](const Values& source, const Target& target, double seconds, int threads) {
        check_same_size("copy_seconds", source, target);
        nb::gil_scoped_release release;
        return hybridfd::copy_seconds(source.data(), target.data(), static_cast<std::int64_t>(source.size()), seconds,
                                      threads);
      },
      "source"_a, "target"_a, "seconds"_a = 0.2, "threads"_a = 1,
      "Fastest seconds per STREAM Copy of float64 arrays (view complex128 as float64), timed in C++.");
  m.def(
      "measure_arithmetic_peak",
      [](double seconds) {
        const auto peak = hybridfd::measure_arithmetic_peak(seconds);
        return std::make_tuple(peak.multiply_add_gflops, peak.fma_gflops);
      },
      "seconds"_a = 0.2, nb::call_guard<nb::gil_scoped_release>(),
      "(multiply+add, FMA) GFLOP/s of this thread's core: the best of ten windows.");
  m.def("measure_issue_rate", &hybridfd::measure_issue_rate, "seconds"_a = 0.01,
        nb::call_guard<nb::gil_scoped_release>(),
        "Instructions per ns this thread issues in a register-only loop (about half when another hardware thread "
        "shares the core).");
  m.def(
      "kernel_seconds",
      [](const hybridfd::Stencil& stencil, const hybridfd_bindings::Array& padded, const hybridfd_bindings::Array& out,
         double seconds, int threads, std::optional<bool> from_memory) {
        std::array<std::string, 2> names;
        const auto [padded_view, out_view] = hybridfd_bindings::views(padded, out, true, names);
        nb::gil_scoped_release release;
        return hybridfd::kernel_seconds(stencil, padded_view, out_view, seconds, threads, from_memory);
      },
      "stencil"_a, "padded"_a, "output"_a, "seconds"_a = 0.2, "threads"_a = 1, "from_memory"_a = nb::none(),
      "Fastest seconds per kernel application to a whole padded grid, split over `threads` threads by x-slabs, "
      "timed in C++.");
}
