// Build facts reported by `hybridfd info` and checked by the test that mpi4py and the
// core load the same MPI library.
#pragma once

#include <string>

namespace hybridfd {

// MPI_Get_library_version as the core sees it.
std::string mpi_library_version();
// The project's version, as the Python package's __version__.
const char* version();
// The compiler flags that decide floating-point results and speed.
const char* build_flags();

}  // namespace hybridfd
