// The MpiWorld of an MPI test binary (set up by mpi_test_main.cpp).
#pragma once

#include "parallel/mpi_world.h"

namespace weft {
extern MpiWorld* g_world;
}  // namespace weft
