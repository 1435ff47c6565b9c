// Counts C++ heap allocations made by code in this extension (the core is linked into
// it), so a test can prove that a steady-state apply allocates nothing. The replacement
// operator new has hidden visibility like the rest of the module: it sees the core's
// allocations and no one else's. MPI's own mallocs are not counted.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace hybridfd_bindings {
std::atomic<std::int64_t> allocations{0};
}

void* operator new(std::size_t size) {
  hybridfd_bindings::allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* memory = std::malloc(size ? size : 1)) return memory;
  throw std::bad_alloc();
}

void* operator new[](std::size_t size) { return ::operator new(size); }
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }
