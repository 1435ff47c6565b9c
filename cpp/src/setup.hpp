// What an Operator and a Halo share when they are built and applied: the options resolved
// and checked by every rank before anything is built, the halo plan, and the apply-time
// checks of the calling thread and the Bloch phases. Private to the core.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "hybridfd/array_ref.hpp"
#include "hybridfd/decomposition.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/operator.hpp"

namespace hybridfd::detail {

struct Setup {
  Config config;
  std::unique_ptr<HaloPlan> plan;
  bool main_thread_only = false;  // MPI_THREAD_FUNNELED: only the main thread may call MPI
};

// Collective. Resolves `options`, checks that every box is at least `widths` thick along
// each axis that exchanges (`reach_name` says what the widths are: "stencil radius",
// "stencil reach", "halo width"), that MPI provides the model's thread level, runs
// `more_checks`, builds the plan with `make_plan`, and agrees with every rank on the
// outcome and on the setting (`described`: the stencil or halo in words). Throws on every
// rank if any rank found a problem.
Setup set_up(const Decomposition& decomposition, const Options& options, const Offset& widths,
             const std::string& reach_name, const std::function<void()>& more_checks,
             const std::function<std::unique_ptr<HaloPlan>()>& make_plan, const std::string& described);

// Local: under MPI_THREAD_FUNNELED only the thread that initialised MPI may apply.
void check_main_thread(const Config& config, bool main_thread_only);

// Local: throws TypeError/ValueError naming what is wrong with the phases.
void check_phases(const Domain& domain, const BlochPhases& phases);

std::string shape_text(const ArrayRef& array);

}  // namespace hybridfd::detail
