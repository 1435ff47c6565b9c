// Operator: what a user calls. Owns the halo plan, buffers, transport and schedule of
// one configuration; op.apply(in, out) applies the stencil to a batch of grids.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hybridfd/array_ref.hpp"
#include "hybridfd/decomposition.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/model.hpp"
#include "hybridfd/stencil.hpp"
#include "hybridfd/tracer.hpp"

namespace hybridfd {

// A fully resolved run configuration, printed with every result.
struct Config {
  std::string approach;
  std::string model;
  std::string schedule;
  std::string transport;
  int batch = 1;
  int slope = 0;
  std::string slope_kind = "geometric";
  int progress = 0;
  int threads = 1;
  double master_share = 1.0;     // funneled-overlap only: thread 0's share of the compute
  std::string thread_level;      // the MPI thread level the model needs
  std::string mpi_thread_level;  // the level the MPI library provides
  std::string placement;         // OpenMP binding and the CPUs the threads ran on
};

// What the user asked for: an approach preset, optionally with explicit overrides (an
// empty string or an empty optional keeps the preset's choice).
struct Options {
  std::string approach = "flat-original";
  std::string model;
  std::optional<int> threads;  // else OMP_NUM_THREADS for a threaded model, else 1
  std::optional<double> master_share;
  std::string schedule;
  std::string transport;
  std::optional<int> batch;
  std::optional<int> slope;
  std::string slope_kind;
  std::optional<int> progress;
};

// Local: the approach's preset with the options' overrides. Throws ValueError naming an
// unknown approach, model, schedule or transport, or a bad value.
Config resolve(const Options& options);
std::vector<std::string> approach_names();

class Operator {
 public:
  // Collective. Throws on every rank if the stencil radius is bad, an exchanging axis of
  // any rank's box is thinner than the radius, an option is unknown or bad, the setting
  // (model, threads, schedule, transport, batches, stencil) differs between ranks, or the
  // MPI library provides a lower thread level than the model needs.
  Operator(std::shared_ptr<const Decomposition> decomposition, const Stencil& stencil, const Options& options = {});
  ~Operator();

  // Collective. `in` and `out` are (G, nx, ny, nz) or (nx, ny, nz) C-contiguous arrays of
  // the domain's dtype, G the same on every rank. Bad arrays throw on every rank before
  // any halo message is sent. `phases` (complex128 only): Bloch-periodic boundaries, the
  // factor per periodic face of the domain (see BlochPhases). A rank uses only the entries
  // of the domain faces its box lies on (others may be 1, as GPAW's adaptor passes them),
  // so the ranks at either end of an axis must pass the same k-point's factors; entries of
  // non-periodic axes must be 1. A bad one throws on every rank too.
  void apply(const ArrayRef& in, const ArrayRef& out, const BlochPhases* phases = nullptr);

  const Config& config() const { return config_; }
  // Where the applies since construction or the last reset spent their time (this rank).
  const PhaseTimes& phase_times() const { return phase_times_; }
  void reset_phase_times() { phase_times_ = {}; }
  // Collective; called like apply, between applies. Traces the applies from now on into
  // buffers of `events_per_thread` events for each thread of the model, forgetting
  // earlier events (Tracer). Throws ValueError on every rank for events_per_thread < 1
  // or if it differs between ranks.
  void start_trace(std::int64_t events_per_thread);
  void stop_trace() { tracer_.stop(); }
  const Tracer& tracer() const { return tracer_; }
  const Stencil& stencil() const { return stencil_; }
  const Decomposition& decomposition() const { return *decomposition_; }

 private:
  // Returns G, or throws ValueError/TypeError naming what is wrong with the arrays.
  std::int64_t check_arrays(const ArrayRef& in, const ArrayRef& out) const;

  std::shared_ptr<const Decomposition> decomposition_;
  Stencil stencil_;
  Config config_;
  std::unique_ptr<HaloPlan> plan_;
  Tracer tracer_;  // outlives the model, which records into it
  std::unique_ptr<Model> model_;
  PhaseTimes phase_times_;
  bool main_thread_only_ = false;  // MPI_THREAD_FUNNELED: only the main thread may call MPI
};

}  // namespace hybridfd
