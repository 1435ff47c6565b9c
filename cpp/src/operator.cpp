#include "hybridfd/operator.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <string_view>

#include "format.hpp"
#include "hybridfd/errors.hpp"
#include "hybridfd/schedule.hpp"
#include "hybridfd/thread_team.hpp"
#include "hybridfd/transport.hpp"
#include "registry.hpp"
#include "setup.hpp"

namespace hybridfd {
namespace {

// The papers' approaches as presets (model, schedule, transport, batch, slope). Later
// issues add models and schedules; an approach is one line here. The hybrid presets use
// flat-optimized's schedule; flat-* are their one-thread case.
struct Preset {
  const char* model;
  const char* schedule;
  int batch;
  int slope;
};

const detail::Registry<Preset>& approaches() {
  static const detail::Registry<Preset> presets{
      "approach",
      {
          // GPAW journal Sect. 4.1: per grid, x, y, z in turn.
          {"flat-original", {"flat", "serial-dims", 1, 0}},
          // Sect. 5: all dimensions at once, double buffered, batched, sloped.
          {"flat-optimized", {"flat", "double-buffered", 8, 1}},
          // Sect. 6, Fig. 6.1: threads that each communicate, or one that does.
          {"hybrid-multiple", {"multiple", "double-buffered", 8, 1}},
          {"hybrid-master-only", {"masteronly", "double-buffered", 8, 1}},
          // Rabenseifner Sect. 5 and 3-A: the master-only optimisations.
          {"hybrid-master-only-threaded-comm", {"masteronly-threaded-comm", "double-buffered", 8, 1}},
          {"hybrid-funneled-overlap", {"funneled-overlap", "double-buffered", 8, 1}},
      }};
  return presets;
}

std::int64_t item_bytes(std::string_view dtype) { return dtype == "complex128" ? 16 : 8; }

}  // namespace

std::vector<std::string> approach_names() { return approaches().names(); }

Config resolve(const Options& options) {
  const Preset& preset = approaches().at(options.approach);
  Config config;
  config.approach = options.approach;
  config.model = preset.model;
  config.schedule = preset.schedule;
  config.transport = "p2p";
  config.batch = preset.batch;
  config.slope = preset.slope;
  if (!options.model.empty()) config.model = options.model;
  if (!options.schedule.empty()) config.schedule = options.schedule;
  if (!options.transport.empty()) config.transport = options.transport;
  if (options.batch) config.batch = *options.batch;
  if (options.slope) config.slope = *options.slope;
  if (!options.slope_kind.empty()) config.slope_kind = options.slope_kind;
  if (options.progress) config.progress = *options.progress;
  required_thread_level(config.model, 1);  // rejects an unknown model
  check_schedule_name(config.schedule);
  check_transport_name(config.transport);
  check_transport_support(config.transport, config.schedule, config.model);
  BatchShape{config.batch, config.slope, slope_kind_from_name(config.slope_kind)}.validate();
  if (config.progress < 0)
    throw ValueError(detail::concat("progress ", config.progress,
                                    " must be 0 (off) or k > 0 (test messages in flight every k grids computed)"));
  // A flat model is one thread whatever OMP_NUM_THREADS says (it may be set for a BLAS).
  config.threads = config.model == "flat" ? options.threads.value_or(1) : resolve_threads(options.threads);
  check_team_threads(config.threads);
  if (config.model == "flat" && config.threads > 1)
    throw ValueError(detail::concat("model 'flat' runs one thread per rank, but threads=", config.threads,
                                    " was asked for; threaded models: multiple, masteronly, "
                                    "masteronly-threaded-comm, funneled-overlap"));
  const bool funneled = config.model == "funneled-overlap";
  if (options.master_share && !funneled)
    throw ValueError(
        detail::concat("master_share applies to the funneled-overlap model only, not to model '", config.model, "'"));
  // Rabenseifner's fixed reservation: thread 0 communicates and computes nothing.
  config.master_share = funneled ? options.master_share.value_or(0.0) : 1.0;
  if (!(config.master_share >= 0.0 && config.master_share <= 1.0))
    throw ValueError(detail::concat("master_share ", config.master_share,
                                    " must be between 0 (thread 0 only communicates) and 1 (an equal share)"));
  config.thread_level = thread_level_name(required_thread_level(config.model, config.threads));
  return config;
}

namespace detail {

std::string shape_text(const ArrayRef& array) {
  return tuple_text(array.shape, static_cast<std::size_t>(std::min(array.ndim, ArrayRef::max_dims)));
}

// What every rank's Operator or Halo must share, in words: what shapes the messages or the
// result. The approach is only a preset of these; master_share, progress and the
// placement only arrange a rank's own work, so they may differ.
static std::string setting_text(const Config& config, const std::string& described) {
  return concat("model ", config.model, ", threads ", config.threads, ", schedule ", config.schedule, ", transport ",
                config.transport, ", batch ", config.batch, ", slope ", config.slope, " (", config.slope_kind, "), ",
                described);
}

Setup set_up(const Decomposition& dec, const Options& options, const Offset& widths, const std::string& reach_name,
             const std::function<void()>& more_checks, const std::function<std::unique_ptr<HaloPlan>()>& make_plan,
             const std::string& described) {
  Setup setup;
  Config& config = setup.config;
  const auto problem = find_problem([&] {
    more_checks();
    // Everything is checked before anything is built, so no rank starts work another
    // rank will refuse.
    config = resolve(options);
    // An axis that exchanges halos (cut into several boxes, or periodic) needs every
    // box to be at least as thick as the ghost layers along it, or a ghost layer would
    // need points from a rank beyond the nearest neighbour.
    const Box& box = dec.local_box();
    for (int axis = 0; axis < 3; ++axis) {
      const bool exchanges = dec.grid()[axis] > 1 || dec.domain().periodic[axis];
      if (exchanges && box.extent[axis] < widths[axis])
        throw ValueError(concat("box of extent ", tuple_text(box.extent), " at offset ", tuple_text(box.offset),
                                " is thinner than the ", reach_name, " ", widths[axis], " on axis ", axis,
                                " (process grid ", tuple_text(dec.grid()), ", domain shape ",
                                tuple_text(dec.domain().shape), ")"));
    }
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    config.mpi_thread_level = thread_level_name(provided);
    const int required = required_thread_level(config.model, config.threads);
    if (provided < required)
      throw ValueError(concat("model '", config.model, "' with ", config.threads, " threads needs ",
                              config.thread_level, ", but MPI was initialised with ", config.mpi_thread_level,
                              " (mpi4py: set mpi4py.rc.thread_level before importing mpi4py.MPI; C++: "
                              "MPI_Init_thread)"));
    setup.main_thread_only = required == MPI_THREAD_FUNNELED && provided < MPI_THREAD_MULTIPLE;
    if (setup.main_thread_only) {
      int main_thread = 0;
      MPI_Is_thread_main(&main_thread);
      if (!main_thread)
        throw ValueError(concat("model '", config.model, "' under ", config.mpi_thread_level,
                                " must be built and applied by the thread that initialised MPI"));
    }
    setup.plan = make_plan();
    const std::int64_t largest_message = setup.plan->max_face_lanes() * static_cast<std::int64_t>(config.batch);
    if (largest_message > INT_MAX)
      throw ValueError(concat("batch ", config.batch, " makes a face message of ", largest_message,
                              " float64 values, more than one MPI message can carry (", INT_MAX, ")"));
  });
  // Thread t of a rank exchanges with thread t of its neighbours, so the counts must
  // agree; so must all that shapes the messages (schedule, transport, batches, widths)
  // or the result (the coefficients), or ranks would wait for faces never sent.
  agree_on_setting(dec.communicator(), problem, setting_text(config, described), "operator setting",
                   dec.caller_ranks());
  return setup;
}

void check_main_thread(const Config& config, bool main_thread_only) {
  if (!main_thread_only) return;
  int main_thread = 0;
  MPI_Is_thread_main(&main_thread);
  if (!main_thread)
    throw ValueError(concat("model '", config.model, "' under ", config.mpi_thread_level,
                            " must be applied by the thread that initialised MPI"));
}

void check_phases(const Domain& domain, const BlochPhases& phases) {
  if (domain.dtype != ScalarType::complex128)
    throw TypeError(concat("Bloch phases need a complex128 domain; this domain is ", scalar_type_name(domain.dtype),
                           " (apply without phases)"));
  for (int axis = 0; axis < 3; ++axis)
    for (int side = 0; side < 2; ++side) {
      const std::complex<double> phase = phases[axis][side];
      if (!std::isfinite(phase.real()) || !std::isfinite(phase.imag()))
        throw ValueError(concat("phase ", phase, " of axis ", axis, " side ", side, " is not finite"));
      if (!domain.periodic[axis] && phase != std::complex<double>{1.0, 0.0})
        throw ValueError(concat("phase ", phase, " of axis ", axis, " side ", side,
                                " must be 1: the axis is not periodic, no ghost crosses its boundary"));
    }
}

}  // namespace detail

Operator::Operator(std::shared_ptr<const Decomposition> decomposition, const Stencil& stencil, const Options& options)
    : decomposition_(std::move(decomposition)), stencil_(stencil) {
  const Decomposition& dec = *decomposition_;
  detail::Setup setup = detail::set_up(
      dec, options, stencil.widths(), stencil.star() ? "stencil radius" : "stencil reach",
      [&] {
        if (stencil.star()) Stencil::check_radius(stencil.radius);
      },
      [&] { return std::make_unique<HaloPlan>(dec, stencil); }, stencil.description());
  config_ = std::move(setup.config);
  plan_ = std::move(setup.plan);
  main_thread_only_ = setup.main_thread_only;
  const BatchShape batches{config_.batch, config_.slope, slope_kind_from_name(config_.slope_kind)};
  model_ =
      make_model(config_.model, {&dec, plan_.get(), &stencil_, config_.schedule, config_.transport, batches,
                                 config_.progress, config_.threads, config_.master_share, &phase_times_, &tracer_});
  config_.placement = config_.threads > 1 ? placement_text(ThreadTeam(config_.threads)) : "one thread";
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
      throw ValueError(detail::concat(name, " array has shape ", detail::shape_text(*array),
                                      "; expected (G, nx, ny, nz) or (nx, ny, nz) with (nx, ny, nz) = ", box_text()));
    const int first = array->ndim - 3;
    for (int axis = 0; axis < 3; ++axis)
      if (array->shape[first + axis] != extent[axis])
        throw ValueError(detail::concat(
            name, " array has shape ", detail::shape_text(*array), "; this rank's box is ", box_text(),
            " points at offset ", detail::tuple_text(decomposition_->local_box().offset), ", so expected ",
            array->ndim == 4 ? "(G, " : "(", extent[0], ", ", extent[1], ", ", extent[2], ")"));
    if (!array->c_contiguous(item_bytes(dtype)))
      throw ValueError(
          detail::concat(name, " array is not C-contiguous: shape ", detail::shape_text(*array), ", strides ",
                         detail::tuple_text(array->strides, static_cast<std::size_t>(array->ndim)), " bytes"));
  }
  if (in.ndim != out.ndim || in.shape != out.shape)
    throw ValueError(detail::concat("output array has shape ", detail::shape_text(out),
                                    " but the input array has shape ", detail::shape_text(in)));
  if (!out.writable) throw ValueError("output array is read-only");
  std::int64_t grids = in.ndim == 4 ? in.shape[0] : 1;
  const std::int64_t bytes = grids * extent[0] * extent[1] * extent[2] * item_bytes(dtype);
  const auto* in_begin = static_cast<const char*>(in.data);
  const auto* out_begin = static_cast<const char*>(out.data);
  if (bytes > 0 && in_begin < out_begin + bytes && out_begin < in_begin + bytes)
    throw ValueError("output array overlaps the input array; the stencil needs separate input and output arrays");
  return grids;
}

void Operator::apply(const ArrayRef& in, const ArrayRef& out, const BlochPhases* phases) {
  // Checked before any MPI call, as under MPI_THREAD_FUNNELED another thread may not even
  // agree on problems with the other ranks: each rank raises on its own.
  detail::check_main_thread(config_, main_thread_only_);
  std::int64_t grids = 0;
  const auto problem = find_problem([&] {
    grids = check_arrays(in, out);
    if (phases) detail::check_phases(decomposition_->domain(), *phases);
  });
  agree_on_problems(decomposition_->communicator(), problem, grids, "number of grids G",
                    decomposition_->caller_ranks());
  plan_->set_phases(phases);
  const auto start = std::chrono::steady_clock::now();
  {
    const TraceSpan span(&tracer_, 0, TraceKind::apply, -1);
    model_->apply(static_cast<const double*>(in.data), static_cast<double*>(const_cast<void*>(out.data)), grids);
  }
  phase_times_.total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++phase_times_.applies;
}

void Operator::start_trace(std::int64_t events_per_thread) {
  const auto problem = find_problem([&] {
    if (events_per_thread < 1)
      throw ValueError(detail::concat("events per thread ", events_per_thread, " must be at least 1"));
    // The buffers are allocated up front: refuse what no memory could hold, by name.
    const std::int64_t memory = static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
    const std::int64_t event_bytes = sizeof(TraceEvent) * static_cast<std::int64_t>(config_.threads);
    if (memory > 0 && events_per_thread > memory / event_bytes)
      throw ValueError(detail::concat("events per thread ", events_per_thread, " for ", config_.threads,
                                      " threads need more than this machine's ", memory, " bytes of memory"));
  });
  agree_on_problems(decomposition_->communicator(), problem, events_per_thread, "events per thread",
                    decomposition_->caller_ranks());
  tracer_.start(decomposition_->communicator(), config_.threads, events_per_thread);
}

}  // namespace hybridfd
