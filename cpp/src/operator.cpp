#include "hybridfd/operator.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "format.hpp"
#include "hybridfd/errors.hpp"
#include "registry.hpp"

namespace hybridfd {
namespace {

// The papers' approaches as presets. Later issues add models and schedules; an
// approach is one line here.
const detail::Registry<Config>& approaches() {
  static const detail::Registry<Config> presets{
      "approach",
      {
          // GPAW journal Sect. 4.1: per grid, x, y, z in turn.
          {"flat-original", {"flat-original", "serial-dims", "p2p", 1, 0, "geometric", 0}},
          // Sect. 5: all dimensions at once, double
          // buffered, batched, sloped.
          {"flat-optimized", {"flat-optimized", "double-buffered", "p2p", 8, 1, "geometric", 0}},
      }};
  return presets;
}

std::string shape_text(const ArrayRef& array) {
  return detail::tuple_text(array.shape, static_cast<std::size_t>(std::min(array.ndim, ArrayRef::max_dims)));
}

std::int64_t item_bytes(std::string_view dtype) { return dtype == "complex128" ? 16 : 8; }

}  // namespace

std::vector<std::string> approach_names() { return approaches().names(); }

Config resolve(const Options& options) {
  Config config = approaches().at(options.approach);
  if (!options.schedule.empty()) config.schedule = options.schedule;
  if (!options.transport.empty()) config.transport = options.transport;
  if (options.batch) config.batch = *options.batch;
  if (options.slope) config.slope = *options.slope;
  if (!options.slope_kind.empty()) config.slope_kind = options.slope_kind;
  if (options.progress) config.progress = *options.progress;
  check_schedule_name(config.schedule);
  check_transport_name(config.transport);
  BatchShape{config.batch, config.slope, slope_kind_from_name(config.slope_kind)}.validate();
  if (config.progress < 0)
    throw ValueError(detail::concat("progress ", config.progress,
                                    " must be 0 (off) or k > 0 (test messages in flight every k grids computed)"));
  return config;
}

Operator::Operator(std::shared_ptr<const Decomposition> decomposition, const Stencil& stencil, const Options& options)
    : decomposition_(std::move(decomposition)), stencil_(stencil) {
  const Decomposition& dec = *decomposition_;
  const auto problem = find_problem([&] {
    Stencil::check_radius(stencil.radius);
    // Everything is checked before anything is built, so no rank starts work another
    // rank will refuse.
    config_ = resolve(options);
    // An axis that exchanges halos (cut into several boxes, or periodic) needs every
    // box to be at least r points thick, or a ghost layer would need points from a
    // rank beyond the nearest neighbour.
    const Box& box = dec.local_box();
    for (int axis = 0; axis < 3; ++axis) {
      const bool exchanges = dec.grid()[axis] > 1 || dec.domain().periodic[axis];
      if (exchanges && box.extent[axis] < stencil.radius)
        throw ValueError(detail::concat(
            "box of extent ", detail::tuple_text(box.extent), " at offset ", detail::tuple_text(box.offset),
            " is thinner than the stencil radius ", stencil.radius, " on axis ", axis, " (process grid ",
            detail::tuple_text(dec.grid()), ", domain shape ", detail::tuple_text(dec.domain().shape), ")"));
    }
    plan_ = std::make_unique<HaloPlan>(dec, stencil.radius);
    const std::int64_t largest_message = plan_->max_face_lanes() * static_cast<std::int64_t>(config_.batch);
    if (largest_message > INT_MAX)
      throw ValueError(detail::concat("batch ", config_.batch, " makes a face message of ", largest_message,
                                      " float64 values, more than one MPI message can carry (", INT_MAX, ")"));
  });
  agree_on_problems(dec.communicator(), problem);

  // Six messages per batch; double buffering has two batches in flight.
  transport_ = make_transport(config_.transport, dec.communicator(), 6, 2);
  const BatchShape batches{config_.batch, config_.slope, slope_kind_from_name(config_.slope_kind)};
  schedule_ = make_schedule(config_.schedule,
                            {plan_.get(), &stencil_, transport_.get(), dec.rank(), batches, config_.progress});
}

Operator::~Operator() = default;

std::int64_t Operator::check_arrays(const ArrayRef& in, const ArrayRef& out) const {
  const Domain& domain = decomposition_->domain();
  const std::string_view dtype = scalar_type_name(domain.dtype);
  const Index3& extent = decomposition_->local_box().extent;
  // Messages are only built on the error path: the checks run on every apply.
  const auto box_text = [&] { return detail::tuple_text(extent); };
  for (const auto* array : {&in, &out}) {
    const char* name = array == &in ? "input" : "output";
    if (array->dtype != dtype)
      throw TypeError(detail::concat(name, " array has dtype ", array->dtype, "; the domain's dtype is ", dtype));
    if (array->ndim != 3 && array->ndim != 4)
      throw ValueError(detail::concat(name, " array has shape ", shape_text(*array),
                                      "; expected (G, nx, ny, nz) or (nx, ny, nz) with (nx, ny, nz) = ", box_text()));
    const int first = array->ndim - 3;
    for (int axis = 0; axis < 3; ++axis)
      if (array->shape[first + axis] != extent[axis])
        throw ValueError(detail::concat(
            name, " array has shape ", shape_text(*array), "; this rank's box is ", box_text(), " points at offset ",
            detail::tuple_text(decomposition_->local_box().offset), ", so expected ", array->ndim == 4 ? "(G, " : "(",
            extent[0], ", ", extent[1], ", ", extent[2], ")"));
    if (!array->c_contiguous(item_bytes(dtype)))
      throw ValueError(detail::concat(name, " array is not C-contiguous: shape ", shape_text(*array), ", strides ",
                                      detail::tuple_text(array->strides, static_cast<std::size_t>(array->ndim)),
                                      " bytes"));
  }
  if (in.ndim != out.ndim || in.shape != out.shape)
    throw ValueError(
        detail::concat("output array has shape ", shape_text(out), " but the input array has shape ", shape_text(in)));
  if (!out.writable) throw ValueError("output array is read-only");
  std::int64_t grids = in.ndim == 4 ? in.shape[0] : 1;
  const std::int64_t bytes = grids * extent[0] * extent[1] * extent[2] * item_bytes(dtype);
  const auto* in_begin = static_cast<const char*>(in.data);
  const auto* out_begin = static_cast<const char*>(out.data);
  if (bytes > 0 && in_begin < out_begin + bytes && out_begin < in_begin + bytes)
    throw ValueError("output array overlaps the input array; the stencil needs separate input and output arrays");
  return grids;
}

void Operator::apply(const ArrayRef& in, const ArrayRef& out) {
  std::int64_t grids = 0;
  const auto problem = find_problem([&] { grids = check_arrays(in, out); });
  agree_on_problems(decomposition_->communicator(), problem, grids, "number of grids G");
  schedule_->apply(static_cast<const double*>(in.data), static_cast<double*>(const_cast<void*>(out.data)), grids);
}

}  // namespace hybridfd
