// Schedule registry: one line per schedule, with its traits.
#include "hybridfd/schedule.hpp"

#include "registry.hpp"

namespace hybridfd {

std::unique_ptr<Schedule> make_serial_dims_schedule(const ScheduleContext& context);
std::unique_ptr<Schedule> make_all_dims_schedule(const ScheduleContext& context);
std::unique_ptr<Schedule> make_double_buffered_schedule(const ScheduleContext& context);
std::unique_ptr<Schedule> make_overlap_schedule(const ScheduleContext& context);
std::unique_ptr<Schedule> make_overlap_xy_schedule(const ScheduleContext& context);

namespace {

struct Entry {
  std::unique_ptr<Schedule> (*make)(const ScheduleContext&);
  ScheduleTraits traits;
};

const detail::Registry<Entry>& registry() {
  static const detail::Registry<Entry> schedules{
      "schedule",
      {
          {"serial-dims", {make_serial_dims_schedule, {3, "nothing", false}}},
          {"all-dims", {make_all_dims_schedule, {1, "nothing", false}}},
          {"double-buffered", {make_double_buffered_schedule, {1, "previous-batch", true}}},
          {"overlap", {make_overlap_schedule, {1, "interior", true}}},
          {"overlap-xy", {make_overlap_xy_schedule, {1, "interior-rows", true}}},
      }};
  return schedules;
}

}  // namespace

std::vector<std::string> schedule_names() { return registry().names(); }

void check_schedule_name(std::string_view name) { registry().at(name); }

std::unique_ptr<Schedule> make_schedule(std::string_view name, const ScheduleContext& context) {
  return registry().at(name).make(context);
}

ScheduleTraits schedule_traits(std::string_view name) { return registry().at(name).traits; }

}  // namespace hybridfd
