#include "hybridfd/version.hpp"

#include <mpi.h>

namespace hybridfd {

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

const char* version() { return HYBRIDFD_VERSION; }

const char* build_flags() { return HYBRIDFD_BUILD_FLAGS; }

}  // namespace hybridfd
