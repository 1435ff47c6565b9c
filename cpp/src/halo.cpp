#include "hybridfd/halo.hpp"

#include <climits>
#include <exception>
#include <mutex>
#include <optional>
#include <string>

#include "format.hpp"
#include "hybridfd/errors.hpp"
#include "hybridfd/thread_team.hpp"
#include "hybridfd/transport.hpp"
#include "schedules/batched.hpp"
#include "setup.hpp"

namespace hybridfd {
namespace {

// Every direction whose moving axes all have ghost layers; with corners, edges and
// corners too.
DirectionSet directions_of(const Offset& widths, bool corners) {
  DirectionSet result = 0;
  for (int tag = 0; tag < halo_directions; ++tag) {
    const Offset s = tag_direction(tag);
    const int moves = (s[0] != 0) + (s[1] != 0) + (s[2] != 0);
    bool has_layers = true;
    for (int axis = 0; axis < 3; ++axis) has_layers = has_layers && (s[axis] == 0 || widths[axis] > 0);
    if (has_layers && (corners || moves == 1)) result |= DirectionSet{1} << tag;
  }
  return result;
}

void check_widths(const Offset& widths) {
  for (const int width : widths)
    if (width < 0 || width > max_radius)
      throw ValueError(detail::concat("halo widths ", detail::tuple_text(widths), " must each be 0..", max_radius));
  if (widths == Offset{0, 0, 0}) throw ValueError("halo widths (0, 0, 0) leave nothing to exchange");
}

std::string halo_text(const Offset& widths, DirectionSet directions) {
  return detail::concat("halo widths ", detail::tuple_text(widths),
                        (directions & ~face_directions) ? " with edges and corners" : " (faces)");
}

}  // namespace

Halo::Halo(std::shared_ptr<const Decomposition> decomposition, const Offset& widths, DirectionSet directions,
           const Options& options)
    : decomposition_(std::move(decomposition)) {
  const Decomposition& dec = *decomposition_;
  detail::Setup setup = detail::set_up(
      dec, options, widths, "halo width", [&] { check_widths(widths); },
      [&] {
        auto plan = std::make_unique<HaloPlan>(dec, widths, directions);
        plan->hold_grids_padded();
        return plan;
      },
      halo_text(widths, directions));
  config_ = std::move(setup.config);
  plan_ = std::move(setup.plan);
  main_thread_only_ = setup.main_thread_only;
  const BatchShape batches{config_.batch, config_.slope, slope_kind_from_name(config_.slope_kind)};
  ModelContext context{&dec,    plan_.get(),      nullptr,         config_.schedule,     config_.transport,
                       batches, config_.progress, config_.threads, config_.master_share, &phase_times_,
                       &tracer_};
  context.halo_work = &work_;
  model_ = make_model(config_.model, context);
  config_.placement = config_.threads > 1 ? placement_text(ThreadTeam(config_.threads)) : "one thread";
}

Halo::Halo(std::shared_ptr<const Decomposition> decomposition, const Offset& widths, bool corners,
           const Options& options)
    : Halo(std::move(decomposition), widths, directions_of(widths, corners), options) {}

Halo::Halo(std::shared_ptr<const Decomposition> decomposition, const Stencil& stencil, const Options& options)
    : Halo(std::move(decomposition), stencil.widths(), directions_read_by(stencil), options) {}

Halo::~Halo() = default;

std::int64_t Halo::check(const ArrayRef& padded, const BlochPhases* phases, const char* call) const {
  if (started_) throw ValueError(detail::concat("halo ", call, " while an exchange is started; finish it first"));
  const Domain& domain = decomposition_->domain();
  const std::string_view dtype = scalar_type_name(domain.dtype);
  const Index3& p = plan_->padded_extent();
  if (padded.dtype != dtype)
    throw TypeError(detail::concat("padded array has dtype ", padded.dtype, "; the domain's dtype is ", dtype));
  const auto expected = [&] {
    return detail::concat("(G, ", p[0], ", ", p[1], ", ", p[2], ") or (", p[0], ", ", p[1], ", ", p[2],
                          "): this rank's box ", detail::tuple_text(plan_->extent()), " plus twice the widths ",
                          detail::tuple_text(plan_->widths()));
  };
  if (padded.ndim != 3 && padded.ndim != 4)
    throw ValueError(detail::concat("padded array has shape ", detail::shape_text(padded), "; expected ", expected()));
  const int first = padded.ndim - 3;
  for (int axis = 0; axis < 3; ++axis)
    if (padded.shape[first + axis] != p[axis])
      throw ValueError(
          detail::concat("padded array has shape ", detail::shape_text(padded), "; expected ", expected()));
  if (!padded.c_contiguous(plan_->lanes_per_point() * 8))
    throw ValueError(
        detail::concat("padded array is not C-contiguous: shape ", detail::shape_text(padded), ", strides ",
                       detail::tuple_text(padded.strides, static_cast<std::size_t>(padded.ndim)), " bytes"));
  if (!padded.writable) throw ValueError("padded array is read-only; the exchange writes its ghost layers");
  if (phases) detail::check_phases(domain, *phases);
  return padded.ndim == 4 ? padded.shape[0] : 1;
}

std::int64_t Halo::agree(const ArrayRef& padded, const BlochPhases* phases, const char* call) {
  detail::check_main_thread(config_, main_thread_only_);
  std::int64_t grids = 0;
  const auto problem = find_problem([&] { grids = check(padded, phases, call); });
  agree_on_problems(decomposition_->communicator(), problem, grids, "number of grids G",
                    decomposition_->caller_ranks());
  plan_->set_phases(phases);
  return grids;
}

void Halo::run(const ArrayRef& padded, const Compute& compute, const BlochPhases* phases) {
  const std::int64_t grids = agree(padded, phases, compute ? "pipeline" : "exchange");
  auto* data = static_cast<double*>(const_cast<void*>(padded.data));
  // A compute that throws must not leave the other ranks waiting for this rank's
  // messages: the exchange runs to its end (later batches' computes skipped), then every
  // rank learns of it and throws; this rank rethrows the compute's own exception.
  std::mutex failure_guard;
  std::exception_ptr failure;
  std::string failure_text;
  work_.base = data;
  if (compute)
    work_.compute = [&](std::int64_t first, std::int64_t last) {
      {
        const std::lock_guard lock(failure_guard);
        if (failure) return;
      }
      try {
        compute(first, last);
      } catch (const std::exception& error) {
        const std::lock_guard lock(failure_guard);
        if (!failure) failure = std::current_exception(), failure_text = error.what();
      } catch (...) {
        const std::lock_guard lock(failure_guard);
        if (!failure) failure = std::current_exception(), failure_text = "an exception";
      }
    };
  const auto start = std::chrono::steady_clock::now();
  model_->apply(data, nullptr, grids);
  work_.compute = nullptr;
  phase_times_.total += detail::seconds_since(start);
  ++phase_times_.applies;
  if (!compute) return;
  std::optional<Problem> problem;
  if (failure) problem = Problem{ProblemKind::value, detail::concat("pipeline compute raised: ", failure_text)};
  try {
    agree_on_problems(decomposition_->communicator(), problem, 0, nullptr, decomposition_->caller_ranks());
  } catch (const ValueError&) {
    if (failure) std::rethrow_exception(failure);
    throw;
  }
}

void Halo::exchange(const ArrayRef& padded, const BlochPhases* phases) { run(padded, nullptr, phases); }

void Halo::pipeline(const ArrayRef& padded, const Compute& compute, const BlochPhases* phases) {
  if (!compute) throw TypeError("pipeline needs a compute function");
  run(padded, compute, phases);
}

void Halo::start(const ArrayRef& padded, const BlochPhases* phases) {
  std::int64_t grids = 0;
  {
    const auto problem = find_problem([&] {
      grids = check(padded, phases, "start");
      if (grids > INT_MAX || plan_->max_face_lanes() * grids > INT_MAX)
        throw ValueError(detail::concat(
            "start of ", grids, " grids makes a message of ", plan_->max_face_lanes() * grids,
            " float64 values, more than one MPI message can carry (", INT_MAX, "); exchange them in batches"));
    });
    detail::check_main_thread(config_, main_thread_only_);
    agree_on_problems(decomposition_->communicator(), problem, grids, "number of grids G",
                      decomposition_->caller_ranks());
  }
  plan_->set_phases(phases);
  const Decomposition& dec = *decomposition_;
  if (grids > split_grids_) {
    // Collective: every rank has the same G.
    split_buffers_.reset();
    split_transport_.reset();
    const TransportLimits limits{static_cast<int>(plan_->faces().size()), 2, plan_->max_face_lanes() * grids,
                                 plan_->directions()};
    split_transport_ = make_transport(config_.transport, dec.communicator(), limits);
    ScheduleContext context;
    context.plan = plan_.get();
    context.transport = split_transport_.get();
    context.rank = dec.rank();
    context.batches = BatchShape{static_cast<int>(grids), 0, SlopeKind::geometric};
    context.phase_times = &phase_times_;
    context.halo_work = &split_work_;
    split_buffers_ = std::make_unique<detail::BatchBuffers>(context, 1);
    split_grids_ = grids;
  }
  split_grids_data_ = static_cast<double*>(const_cast<void*>(padded.data));
  split_work_.base = split_grids_data_;
  split_count_ = grids;
  split_ticket_ = grids > 0 ? split_buffers_->post(0, split_grids_data_, 0, grids, every_direction) : -1;
  started_ = true;
}

void Halo::finish() {
  const auto problem = find_problem([&] {
    if (!started_) throw ValueError("halo finish without a start");
  });
  agree_on_problems(decomposition_->communicator(), problem, 0, nullptr, decomposition_->caller_ranks());
  if (split_ticket_ >= 0) {
    split_buffers_->wait(split_ticket_);
    split_buffers_->compute_batch(0, split_grids_data_, nullptr, 0, split_count_);
  }
  started_ = false;
  split_ticket_ = -1;
}

}  // namespace hybridfd
