// Schedule registry: one line per schedule.
#include "hybridfd/schedule.hpp"

#include "registry.hpp"

namespace hybridfd {

std::unique_ptr<Schedule> make_serial_dims_schedule(const ScheduleContext& context);
std::unique_ptr<Schedule> make_all_dims_schedule(const ScheduleContext& context);
std::unique_ptr<Schedule> make_double_buffered_schedule(const ScheduleContext& context);
std::unique_ptr<Schedule> make_overlap_schedule(const ScheduleContext& context);
std::unique_ptr<Schedule> make_overlap_xy_schedule(const ScheduleContext& context);

namespace {

using Factory = std::unique_ptr<Schedule> (*)(const ScheduleContext&);

const detail::Registry<Factory>& registry() {
  static const detail::Registry<Factory> schedules{"schedule",
                                                   {
                                                       {"serial-dims", make_serial_dims_schedule},
                                                       {"all-dims", make_all_dims_schedule},
                                                       {"double-buffered", make_double_buffered_schedule},
                                                       {"overlap", make_overlap_schedule},
                                                       {"overlap-xy", make_overlap_xy_schedule},
                                                   }};
  return schedules;
}

}  // namespace

std::vector<std::string> schedule_names() { return registry().names(); }

void check_schedule_name(std::string_view name) { registry().at(name); }

std::unique_ptr<Schedule> make_schedule(std::string_view name, const ScheduleContext& context) {
  return registry().at(name)(context);
}

}  // namespace hybridfd
