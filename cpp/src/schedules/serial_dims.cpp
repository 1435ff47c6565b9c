// serial-dims: GPAW's original exchange (GPAW journal, Sect. 4.1). For each batch of
// grids: exchange surface points along x and wait, then y, then z, then compute. With
// batch 1 this is the flat-original approach.
#include <algorithm>
#include <array>
#include <vector>

#include "hybridfd/kernel.hpp"
#include "hybridfd/schedule.hpp"

namespace hybridfd {
namespace {

class SerialDims final : public Schedule {
 public:
  explicit SerialDims(const ScheduleContext& context)
      : context_(context),
        slot_lanes_(context.plan->max_face_lanes() * context.batch),
        // Zero once: ghosts at a non-periodic edge are never written and stay zero.
        padded_(static_cast<std::size_t>(context.plan->padded_lanes() * context.batch), 0.0),
        send_(static_cast<std::size_t>(slot_lanes_ * 6)),
        receive_(static_cast<std::size_t>(slot_lanes_ * 6)) {}

  void apply(const double* in, double* out, std::int64_t grids) override {
    const HaloPlan& plan = *context_.plan;
    const std::int64_t grid_lanes = plan.grid_lanes();
    const std::int64_t padded_lanes = plan.padded_lanes();
    const Region box{{0, 0, 0}, plan.extent()};
    for (std::int64_t first = 0; first < grids; first += context_.batch) {
      const std::int64_t count = std::min<std::int64_t>(context_.batch, grids - first);
      for (std::int64_t k = 0; k < count; ++k)
        plan.copy_interior_in(in + (first + k) * grid_lanes, padded_.data() + k * padded_lanes);
      for (int axis = 0; axis < 3; ++axis) exchange(axis, count);
      for (std::int64_t k = 0; k < count; ++k)
        apply_stencil(*context_.stencil, plan, padded_.data() + k * padded_lanes, box, out + (first + k) * grid_lanes);
    }
  }

 private:
  // Blocking exchange of both faces of one axis for `count` grids, each face's grids
  // packed one after another into one message.
  void exchange(int axis, std::int64_t count) {
    const HaloPlan& plan = *context_.plan;
    const std::int64_t padded_lanes = plan.padded_lanes();
    std::array<FaceMessage, 2> messages;
    for (int side = 0; side < 2; ++side) {
      const int index = 2 * axis + side;
      const Face& face = plan.faces()[index];
      double* send = send_.data() + index * slot_lanes_;
      double* receive = receive_.data() + index * slot_lanes_;
      if (face.neighbour != MPI_PROC_NULL)
        for (std::int64_t k = 0; k < count; ++k)
          plan.pack(face, padded_.data() + k * padded_lanes, send + k * face.lanes);
      messages[side] = {face.neighbour, send, receive, face.lanes * count, face.send_tag, face.receive_tag};
    }
    context_.transport->start(messages);
    context_.transport->finish();
    for (int side = 0; side < 2; ++side) {
      const Face& face = plan.faces()[2 * axis + side];
      if (face.neighbour == MPI_PROC_NULL) continue;
      const double* receive = receive_.data() + (2 * axis + side) * slot_lanes_;
      for (std::int64_t k = 0; k < count; ++k)
        plan.unpack(face, receive + k * face.lanes, padded_.data() + k * padded_lanes);
    }
  }

  ScheduleContext context_;
  std::int64_t slot_lanes_;
  std::vector<double> padded_;
  std::vector<double> send_;
  std::vector<double> receive_;
};

}  // namespace

std::unique_ptr<Schedule> make_serial_dims_schedule(const ScheduleContext& context) {
  return std::make_unique<SerialDims>(context);
}

}  // namespace hybridfd
