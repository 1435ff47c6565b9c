// Umbrella header of the MiniMD mini-app (CMake target hybridfd::minimd):
// #include <hybridfd/minimd/minimd.hpp>.
#pragma once

#include "hybridfd/minimd/lennard_jones.hpp"
#include "hybridfd/minimd/neighbour_list.hpp"
#include "hybridfd/minimd/particle_exchange.hpp"
#include "hybridfd/minimd/particles.hpp"
