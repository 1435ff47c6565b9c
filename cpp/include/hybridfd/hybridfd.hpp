// Umbrella header for C++ users of the library: #include <hybridfd/hybridfd.hpp>. The
// MiniMD mini-app has its own (hybridfd/minimd/minimd.hpp, target hybridfd::minimd).
#pragma once

#include "hybridfd/array_ref.hpp"
#include "hybridfd/caches.hpp"
#include "hybridfd/decomposition.hpp"
#include "hybridfd/domain.hpp"
#include "hybridfd/errors.hpp"
#include "hybridfd/halo.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/kernel.hpp"
#include "hybridfd/model.hpp"
#include "hybridfd/operator.hpp"
#include "hybridfd/ring_window.hpp"
#include "hybridfd/schedule.hpp"
#include "hybridfd/stencil.hpp"
#include "hybridfd/thread_team.hpp"
#include "hybridfd/tracer.hpp"
#include "hybridfd/transport.hpp"
#include "hybridfd/version.hpp"
