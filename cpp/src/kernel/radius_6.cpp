// The sweeps of radius 6 (sweep_radius.hpp).
#include "sweep_radius.hpp"

namespace hybridfd::kernel {

template <>
void sweep_radius<6>(const Sweep& sweep, const Stencil& stencil, const HaloPlan& plan, const BoxInput& input,
                     const Region& region, double* out) {
  sweep_one_radius<6>(sweep, stencil, plan, input, region, out);
}

}  // namespace hybridfd::kernel
