// Umbrella header for C++ users: #include <hybridfd/hybridfd.hpp>.
#pragma once

#include "hybridfd/array_ref.hpp"
#include "hybridfd/decomposition.hpp"
#include "hybridfd/domain.hpp"
#include "hybridfd/errors.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/kernel.hpp"
#include "hybridfd/model.hpp"
#include "hybridfd/operator.hpp"
#include "hybridfd/peak.hpp"
#include "hybridfd/ring_window.hpp"
#include "hybridfd/schedule.hpp"
#include "hybridfd/stencil.hpp"
#include "hybridfd/thread_team.hpp"
#include "hybridfd/tracer.hpp"
#include "hybridfd/transport.hpp"
#include "hybridfd/version.hpp"
