// Test hooks of hybridfd._core, compiled in with -DHYBRIDFD_TESTING=ON only: a count of
// the C++ heap allocations made by code in this extension (the core is linked into it),
// so a test can prove that a steady-state apply or MD run allocates nothing. The
// replacement operator new has hidden visibility like the rest of the module: it sees
// the core's allocations and no one else's. MPI's own mallocs are not counted.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <hybridfd/minimd/lennard_jones.hpp>
#include <hybridfd/operator.hpp>
#include <new>
#include <string>

#include "array_views.hpp"

namespace {
std::atomic<std::int64_t> allocations{0};
}

void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* memory = std::malloc(size ? size : 1)) return memory;
  throw std::bad_alloc();
}

void* operator new[](std::size_t size) { return ::operator new(size); }
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }

namespace hybridfd_bindings {

namespace nb = nanobind;
using namespace nb::literals;

// Adds the counting methods to the classes module.cpp bound.
void add_test_hooks(nb::module_& m) {
  nb::object op = m.attr("Operator");
  op.attr("apply_counting_allocations") = nb::cpp_function(
      [](hybridfd::Operator& self, const Array& in, const Array& out, bool out_writable) {
        std::array<std::string, 2> names;
        const auto [in_view, out_view] = views(in, out, out_writable, names);
        nb::gil_scoped_release release;
        const std::int64_t before = allocations.load();
        self.apply(in_view, out_view);
        return allocations.load() - before;
      },
      nb::is_method(), nb::scope(op), nb::name("apply_counting_allocations"), "input"_a, "output"_a,
      "output_writable"_a, "apply, returning how many C++ heap allocations the core made meanwhile");
  nb::object md = m.attr("LennardJones");
  md.attr("run_counting_allocations") = nb::cpp_function(
      [](hybridfd::minimd::LennardJones& self, std::int64_t steps) {
        nb::gil_scoped_release release;
        const std::int64_t before = allocations.load();
        self.run(steps, 0);
        return allocations.load() - before;
      },
      nb::is_method(), nb::scope(md), nb::name("run_counting_allocations"), "steps"_a,
      "run without thermo between, returning the C++ heap allocations the core made");
}

}  // namespace hybridfd_bindings
