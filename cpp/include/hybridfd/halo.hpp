// Halo: the halo exchange on its own, under the user's own kernels (GHEX's exchange object,
// AMReX's FillBoundary_nowait/_finish, PETSc's DMGlobalToLocalBegin/End), with the papers'
// batching, slope, double buffering, threads and transports of an approach.
//
// It works on batches of padded grids, (G, nx+2wx, ny+2wy, nz+2wz) or one 3-D grid, whose
// interior [w, w+n) holds the rank's box; an exchange fills every ghost layer: from the
// neighbours, from the grid's own other end along a periodic axis of one box, times the
// Bloch phases where ghosts cross the domain's periodic boundary (halo_plan.hpp), and with
// zeros beyond a non-periodic edge. With corners, the edge and corner blocks are filled
// too (what a stencil with diagonal offsets reads); without, the six faces only (a star
// stencil's halo: edges and corners of the padded grid are left as they are).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "hybridfd/array_ref.hpp"
#include "hybridfd/decomposition.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/model.hpp"
#include "hybridfd/operator.hpp"
#include "hybridfd/stencil.hpp"
#include "hybridfd/tracer.hpp"

namespace hybridfd {

class Transport;

namespace detail {
class BatchBuffers;
}

class Halo {
 public:
  // Called with the grids [first, last) of a batch whose ghosts are in.
  using Compute = std::function<void(std::int64_t first, std::int64_t last)>;

  // flat-optimized (all directions at once, batched, double buffered): what an exchange on
  // its own wants by default, more than the papers' baseline an Operator defaults to.
  static Options default_options() { return Options{.approach = "flat-optimized"}; }

  // Collective. Throws on every rank, naming the value, for widths outside 0..6 or all 0,
  // a box thinner than a width along an axis that exchanges, or options that are bad or
  // differ between ranks (as Operator).
  Halo(std::shared_ptr<const Decomposition> decomposition, const Offset& widths, bool corners,
       const Options& options = default_options());
  // The halo `stencil` reads: its widths, and edges and corners if it reads them.
  Halo(std::shared_ptr<const Decomposition> decomposition, const Stencil& stencil,
       const Options& options = default_options());
  ~Halo();

  // Collective: fills every ghost layer of the padded grids, batch by batch as the
  // approach says. Bad arrays or phases throw on every rank before any message is sent.
  void exchange(const ArrayRef& padded, const BlochPhases* phases = nullptr);
  // Collective: as exchange, and calls compute(first, last) for each batch as soon as its
  // ghosts are in, so the batch's compute overlaps the next batches' messages (with a
  // schedule that keeps them in flight: double-buffered). Under the multiple model each
  // thread calls it for its own share of the grids.
  void pipeline(const ArrayRef& padded, const Compute& compute, const BlochPhases* phases = nullptr);
  // Collective, split phase: start posts the messages of every grid at once and returns;
  // finish waits for them and fills the ghosts. Between the two the array must stay alive
  // and its interior unchanged. start while started, or finish, exchange or pipeline
  // while not finished, throw on every rank.
  void start(const ArrayRef& padded, const BlochPhases* phases = nullptr);
  void finish();
  bool started() const { return started_; }

  const Config& config() const { return config_; }
  const HaloPlan& plan() const { return *plan_; }
  const Decomposition& decomposition() const { return *decomposition_; }
  const PhaseTimes& phase_times() const { return phase_times_; }

 private:
  Halo(std::shared_ptr<const Decomposition> decomposition, const Offset& widths, DirectionSet directions,
       const Options& options);
  // Returns G, or throws naming what is wrong with the array or the phases.
  std::int64_t check(const ArrayRef& padded, const BlochPhases* phases, const char* call) const;
  // The checks of an exchange, agreed by every rank; returns G.
  std::int64_t agree(const ArrayRef& padded, const BlochPhases* phases, const char* call);
  void run(const ArrayRef& padded, const Compute& compute, const BlochPhases* phases);

  std::shared_ptr<const Decomposition> decomposition_;
  Config config_;
  std::unique_ptr<HaloPlan> plan_;
  Tracer tracer_;  // never started: the models record into it when it is on
  HaloWork work_;
  std::unique_ptr<Model> model_;
  PhaseTimes phase_times_;
  bool main_thread_only_ = false;
  // The split phase: a transport and buffers for one batch of every grid, made (and
  // remade, collectively) when a start has more grids than they hold.
  std::int64_t split_grids_ = 0;
  std::unique_ptr<Transport> split_transport_;
  std::unique_ptr<detail::BatchBuffers> split_buffers_;
  HaloWork split_work_;
  double* split_grids_data_ = nullptr;
  std::int64_t split_count_ = 0;
  int split_ticket_ = -1;
  bool started_ = false;
};

}  // namespace hybridfd
