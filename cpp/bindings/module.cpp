// nanobind module hybridfd._core: converts arrays and communicators, nothing else.
#include <mpi4py/mpi4py.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <hybridfd/hybridfd.hpp>
#include <hybridfd/minimd/minimd.hpp>
#include <utility>

#include "array_views.hpp"

namespace nb = nanobind;
namespace minimd = hybridfd::minimd;
using namespace nb::literals;

// mpi4py.MPI.Comm <-> MPI_Comm through mpi4py's C API, so the core and mpi4py share
// one communicator (and therefore must share one libmpi). MPI_Comm is a plain int in
// MPICH, so it is wrapped in its own type rather than given a caster of its own.
struct Comm {
  MPI_Comm handle = MPI_COMM_NULL;
};

namespace nanobind::detail {
template <>
struct type_caster<Comm> {
  NB_TYPE_CASTER(Comm, const_name("mpi4py.MPI.Comm"))
  bool from_python(handle source, uint8_t, cleanup_list*) noexcept {
    if (!PyObject_TypeCheck(source.ptr(), &PyMPIComm_Type)) return false;
    value.handle = *PyMPIComm_Get(source.ptr());
    return true;
  }
  // The returned mpi4py object does not own the handle; the Decomposition frees it.
  static handle from_cpp(Comm comm, rv_policy, cleanup_list*) noexcept { return PyMPIComm_New(comm.handle); }
};
}  // namespace nanobind::detail

#ifdef HYBRIDFD_TESTING
namespace hybridfd_bindings {
void add_test_hooks(nb::module_& m);  // test_hooks.cpp
}
#endif

namespace {

using hybridfd_bindings::Array;
using hybridfd_bindings::dtype_name;
using hybridfd_bindings::view;
using hybridfd_bindings::views;

nb::tuple box_tuple(const hybridfd::Box& box) { return nb::make_tuple(box.offset, box.extent); }

// A numpy array that owns `values`.
template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> numpy_array(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* pointer) noexcept { delete static_cast<std::vector<T>*>(pointer); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(owned->data(), {owned->size()}, owner);
}

// This rank's trace: per thread, the events' start and end in seconds on rank 0's
// timeline, kinds and batch numbers as arrays; dropped events per thread; the clock offset.
nb::dict trace_dict(const hybridfd::Tracer& tracer) {
  const double shift = static_cast<double>(tracer.clock_sync().shift_ns);
  nb::list threads;
  nb::list dropped;
  for (int thread = 0; thread < tracer.threads(); ++thread) {
    const auto events = tracer.events(thread);
    std::vector<double> start(events.size()), end(events.size());
    std::vector<std::int32_t> kind(events.size()), batch(events.size()), messages(events.size());
    for (std::size_t k = 0; k < events.size(); ++k) {
      start[k] = (static_cast<double>(events[k].start_ns) + shift) * 1e-9;
      end[k] = (static_cast<double>(events[k].end_ns) + shift) * 1e-9;
      kind[k] = static_cast<std::int32_t>(events[k].kind);
      batch[k] = events[k].batch;
      messages[k] = events[k].messages;
    }
    nb::dict arrays;
    arrays["start"] = numpy_array(std::move(start));
    arrays["end"] = numpy_array(std::move(end));
    arrays["kind"] = numpy_array(std::move(kind));
    arrays["batch"] = numpy_array(std::move(batch));
    arrays["messages"] = numpy_array(std::move(messages));
    threads.append(arrays);
    dropped.append(tracer.dropped(thread));
  }
  nb::dict result;
  result["on"] = tracer.on();
  result["events_per_thread"] = tracer.capacity();
  result["threads"] = threads;
  result["dropped"] = dropped;
  result["clock_shift_seconds"] = shift * 1e-9;
  result["clock_uncertainty_seconds"] = static_cast<double>(tracer.clock_sync().uncertainty_ns) * 1e-9;
  return result;
}

// A numpy (rows, 3) float64 array that owns `values`.
nb::ndarray<nb::numpy, double, nb::ndim<2>> numpy_rows_of_3(std::vector<double>&& values) {
  auto* owned = new std::vector<double>(std::move(values));
  nb::capsule owner(owned, [](void* pointer) noexcept { delete static_cast<std::vector<double>*>(pointer); });
  return nb::ndarray<nb::numpy, double, nb::ndim<2>>(owned->data(), {owned->size() / 3, 3}, owner);
}

using DoubleArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using TagArray = nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

}  // namespace

namespace {

nb::dict config_dict(const hybridfd::Config& config) {
  nb::dict result;
  result["approach"] = config.approach;
  result["model"] = config.model;
  result["threads"] = config.threads;
  result["master_share"] = config.master_share;
  result["thread_level"] = config.thread_level;
  result["mpi_thread_level"] = config.mpi_thread_level;
  result["placement"] = config.placement;
  result["schedule"] = config.schedule;
  result["transport"] = config.transport;
  result["batch"] = config.batch;
  result["slope"] = config.slope;
  result["slope_kind"] = config.slope_kind;
  result["progress"] = config.progress;
  return result;
}

}  // namespace

NB_MODULE(_core, m) {
  if (import_mpi4py() < 0) throw nb::python_error();
  hybridfd_bindings::translate_type_errors();

  m.def("mpi_library_version", &hybridfd::mpi_library_version);
  m.def("build_flags", &hybridfd::build_flags);
  m.def("approach_names", &hybridfd::approach_names);
  m.def(
      "approach_preset",
      [](const std::string& name) {
        // Local and cheap (no MPI, nothing built): the tuner labels its candidates with it.
        hybridfd::Options options;
        options.approach = name;
        const hybridfd::Config config = hybridfd::resolve(options);
        return std::make_tuple(config.model, config.schedule);
      },
      "approach"_a, "(model, schedule) of an approach's preset");
  m.def(
      "cache_sizes",
      [] {
        const auto sizes = hybridfd::cache_sizes();
        return std::make_tuple(sizes.level1_data, sizes.level2, sizes.last_level_share);
      },
      "(L1 data, L2, share of the last-level cache) of one core, in bytes: where a grid lives.");
  m.def("schedule_names", &hybridfd::schedule_names);
  m.def("trace_kind_names", [] {
    std::vector<std::string> names;
    for (int kind = 0; kind < hybridfd::trace_kind_count; ++kind)
      names.emplace_back(hybridfd::trace_kind_name(static_cast<hybridfd::TraceKind>(kind)));
    return names;
  });
  m.def("model_names", &hybridfd::model_names);
  m.def("transport_names", &hybridfd::transport_names);
  m.def("particle_transport_names", &minimd::particle_transport_names);
  m.def(
      "transport_support",
      [](const std::string& name) {
        const auto support = hybridfd::transport_support(name);
        nb::dict result;
        result["schedules"] = support.schedules;
        result["models"] = support.models;
        return result;
      },
      "transport"_a, "the schedules and models the transport works with");
  m.def("schedule_traits", [] {
    nb::dict result;
    for (const std::string& name : hybridfd::schedule_names()) {
      const hybridfd::ScheduleTraits traits = hybridfd::schedule_traits(name);
      nb::dict entry;
      entry["exchanges_per_batch"] = traits.exchanges_per_batch;
      entry["hides_exchange_behind"] = std::string(traits.hides_exchange_behind);
      entry["takes_slope"] = traits.takes_slope;
      result[name.c_str()] = entry;
    }
    return result;
  });
  m.def("model_traits", [] {
    nb::dict result;
    for (const std::string& name : hybridfd::model_names()) {
      const hybridfd::ModelTraits traits = hybridfd::model_traits(name);
      nb::dict entry;
      entry["thread_level"] = std::string(hybridfd::thread_level_name(traits.thread_level));
      entry["grid_workers"] = std::string(traits.grid_workers);
      entry["at_scale"] = std::string(traits.at_scale);
      result[name.c_str()] = entry;
    }
    return result;
  });
  m.def("transport_traits", [] {
    nb::dict result;
    for (const std::string& name : hybridfd::transport_names()) {
      const hybridfd::TransportTraits traits = hybridfd::transport_traits(name);
      const hybridfd::TransportSupport support = hybridfd::transport_support(name);
      nb::dict entry;
      entry["mpi_version"] = traits.mpi_version;
      entry["mpi_needs"] = std::string(traits.mpi_needs);
      entry["collective_setup"] = traits.collective_setup;
      entry["unavailable"] = hybridfd::transport_unavailable(name);
      entry["schedules"] = support.schedules;
      entry["models"] = support.models;
      result[name.c_str()] = entry;
    }
    return result;
  });
  m.def("automatic_grid", &hybridfd::automatic_grid, "shape"_a, "ranks"_a);
  m.def("total_surface", &hybridfd::total_surface, "shape"_a, "grid"_a);
  m.def(
      "split_axis",
      [](std::int64_t points, int parts, int part) {
        const auto result = hybridfd::split_axis(points, parts, part);
        return std::make_tuple(result.offset, result.extent);
      },
      "points"_a, "parts"_a, "part"_a);
  m.def(
      "comm_size",
      [](Comm comm) {
        int size = 0;
        MPI_Comm_size(comm.handle, &size);
        return size;
      },
      "comm"_a, "The communicator's size as the core sees it (proves a communicator crossed the boundary).");
  m.def(
      "agree_on_problems",
      [](Comm comm, int kind, const std::string& message, std::int64_t value, const std::string& value_name,
         const std::vector<int>& rank_names) {
        std::optional<hybridfd::Problem> local;
        if (kind != 0) local = hybridfd::Problem{static_cast<hybridfd::ProblemKind>(kind), message};
        hybridfd::agree_on_problems(comm.handle, local, value, value_name.empty() ? nullptr : value_name.c_str(),
                                    rank_names);
      },
      "comm"_a, "kind"_a, "message"_a, "value"_a = 0, "value_name"_a = "", "rank_names"_a = std::vector<int>{},
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "agree_on_setting",
      [](Comm comm, int kind, const std::string& message, const std::string& setting, const std::string& setting_name,
         const std::vector<int>& rank_names) {
        std::optional<hybridfd::Problem> local;
        if (kind != 0) local = hybridfd::Problem{static_cast<hybridfd::ProblemKind>(kind), message};
        hybridfd::agree_on_setting(comm.handle, local, setting, setting_name.c_str(), rank_names);
      },
      "comm"_a, "kind"_a, "message"_a, "setting"_a, "setting_name"_a, "rank_names"_a = std::vector<int>{},
      nb::call_guard<nb::gil_scoped_release>());

  nb::class_<hybridfd::Stencil>(m, "Stencil")
      .def_ro("radius", &hybridfd::Stencil::radius)
      .def_ro("centre", &hybridfd::Stencil::centre)
      .def("coefficients", &hybridfd::Stencil::coefficients)
      .def_prop_ro("symmetric", &hybridfd::Stencil::symmetric)
      .def_prop_ro("isotropic", &hybridfd::Stencil::isotropic)
      .def_prop_ro("star", &hybridfd::Stencil::star)
      .def_prop_ro("reads_edges", &hybridfd::Stencil::reads_edges)
      .def_prop_ro("widths", &hybridfd::Stencil::widths)
      .def("offsets", &hybridfd::Stencil::offsets)
      .def("terms",
           [](const hybridfd::Stencil& self) {
             std::vector<std::tuple<hybridfd::Offset, double, bool>> result;
             for (const auto& term : self.terms) result.emplace_back(term.offset, term.weight, term.paired);
             return result;
           })
      .def("reads_direction", &hybridfd::Stencil::reads_direction, "direction"_a)
      .def("description", &hybridfd::Stencil::description)
      .def_static("laplace", &hybridfd::Stencil::laplace, "radius"_a, "spacing"_a)
      .def_static(
          "from_coefficients",
          [](const std::vector<double>& coefficients) { return hybridfd::Stencil::from_coefficients(coefficients); },
          "coefficients"_a)
      .def_static(
          "from_offsets",
          [](const std::vector<hybridfd::Offset>& offsets, const std::vector<double>& weights) {
            return hybridfd::Stencil::from_offsets(offsets, weights);
          },
          "offsets"_a, "weights"_a);

  m.def(
      "apply_kernel",
      [](const hybridfd::Stencil& stencil, const Array& padded, const Array& out, bool out_writable,
         const std::optional<std::pair<hybridfd::Index3, hybridfd::Index3>>& region, int threads,
         std::optional<bool> from_memory) {
        std::array<std::string, 2> names;
        const auto [padded_view, out_view] = views(padded, out, out_writable, names);
        std::optional<hybridfd::Region> box_region;
        if (region) box_region = hybridfd::Region{region->first, region->second};
        nb::gil_scoped_release release;
        hybridfd::apply_stencil_to_padded(stencil, padded_view, out_view, box_region, threads, from_memory);
      },
      "stencil"_a, "padded"_a, "output"_a, "output_writable"_a, "region"_a = nb::none(), "threads"_a = 1,
      "from_memory"_a = nb::none());
  nb::class_<hybridfd::Decomposition>(m, "Decomposition")
      .def(
          "__init__",
          [](hybridfd::Decomposition* self, Comm comm, const hybridfd::Index3& shape,
             const std::array<bool, 3>& periodic, const std::string& dtype,
             const std::optional<hybridfd::ProcessGrid>& grid) {
            const hybridfd::Domain domain{shape, periodic, hybridfd::scalar_type_from_name(dtype)};
            new (self) hybridfd::Decomposition(comm.handle, domain, grid);
          },
          "comm"_a, "shape"_a, "periodic"_a, "dtype"_a, "grid"_a = nb::none())
      .def(
          "__init__",
          [](hybridfd::Decomposition* self, Comm comm, const hybridfd::Index3& shape,
             const std::array<bool, 3>& periodic, const std::string& dtype,
             const std::array<std::vector<std::int64_t>, 3>& splits, const std::vector<std::array<int, 3>>& positions) {
            const hybridfd::Domain domain{shape, periodic, hybridfd::scalar_type_from_name(dtype)};
            new (self) hybridfd::Decomposition(comm.handle, domain, hybridfd::Layout{splits, positions});
          },
          "comm"_a, "shape"_a, "periodic"_a, "dtype"_a, "splits"_a, "positions"_a)
      .def_prop_ro("grid", &hybridfd::Decomposition::grid)
      .def_prop_ro("splits", &hybridfd::Decomposition::splits)
      .def_prop_ro("rank", &hybridfd::Decomposition::rank)
      .def_prop_ro("size", &hybridfd::Decomposition::size)
      .def_prop_ro("caller_ranks", &hybridfd::Decomposition::caller_ranks)
      .def_prop_ro("communicator", [](const hybridfd::Decomposition& self) { return Comm{self.communicator()}; })
      .def("coords", &hybridfd::Decomposition::coords, "rank"_a)
      .def(
          "box", [](const hybridfd::Decomposition& self, int rank) { return box_tuple(self.box(rank)); }, "rank"_a)
      .def("neighbours", &hybridfd::Decomposition::neighbours, "axis"_a);

  // The Hybrid-Advanced rings on their own: variable-size messages between ranks.
  nb::class_<hybridfd::RingWindow>(m, "RingWindow")
      .def(
          "__init__",
          [](hybridfd::RingWindow* self, Comm comm, int rings, std::int64_t ring_bytes, bool poll_with_atomics) {
            new (self) hybridfd::RingWindow(comm.handle, rings, ring_bytes, poll_with_atomics);
          },
          "comm"_a, "rings"_a, "ring_bytes"_a, "poll_with_atomics"_a = false, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "send",
          [](hybridfd::RingWindow& self,
             const std::vector<std::tuple<int, int, nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>>& messages) {
            std::vector<hybridfd::OutgoingMessage> outgoing;
            for (const auto& [target, ring, data] : messages)
              outgoing.push_back({target, ring, data.data(), static_cast<std::int64_t>(data.nbytes())});
            nb::gil_scoped_release release;
            self.send(outgoing);
          },
          "messages"_a, "(target, ring, C-contiguous array) triples; waits while a target's ring is full")
      .def(
          "receive",
          [](hybridfd::RingWindow& self, int ring, nb::ndarray<std::uint8_t, nb::ndim<1>, nb::c_contig> into) {
            hybridfd::IncomingMessage message{ring, into.data(), static_cast<std::int64_t>(into.size())};
            nb::gil_scoped_release release;
            self.receive({&message, 1});
            return message.bytes;
          },
          "ring"_a, "into"_a, "waits for the ring's next message, copies it into `into`, returns its bytes")
      .def_prop_ro("rings", &hybridfd::RingWindow::rings)
      .def_prop_ro("largest_message", &hybridfd::RingWindow::largest_message)
      .def_prop_ro("waits_for_room", &hybridfd::RingWindow::waits_for_room)
      .def_prop_ro("polls_local_memory", &hybridfd::RingWindow::polls_local_memory);

  // The MiniMD Lennard-Jones mini-app (hybridfd.particles is its front).
  nb::class_<minimd::LennardJones>(m, "LennardJones")
      .def(
          "__init__",
          [](minimd::LennardJones* self, Comm comm, const std::array<double, 3>& box, const DoubleArray& positions,
             const DoubleArray& velocities, const TagArray& tags, double cutoff, double skin, double dt,
             int reneighbor_every, const std::string& transport, const std::optional<hybridfd::ProcessGrid>& grid) {
            const minimd::LennardJonesOptions options{cutoff, skin, dt, reneighbor_every, transport, grid};
            const std::span<const double> position_values(positions.data(), positions.size());
            const std::span<const double> velocity_values(velocities.data(), velocities.size());
            const std::span<const std::int64_t> tag_values(tags.data(), tags.size());
            nb::gil_scoped_release release;
            new (self) minimd::LennardJones(comm.handle, box, position_values, velocity_values, tag_values, options);
          },
          "comm"_a, "box"_a, "positions"_a, "velocities"_a, "tags"_a, "cutoff"_a, "skin"_a, "dt"_a,
          "reneighbor_every"_a, "transport"_a, "grid"_a = nb::none())
      .def(
          "run",
          [](minimd::LennardJones& self, std::int64_t steps, std::int64_t thermo_every, bool census) {
            std::vector<minimd::ThermoRecord> records;
            {
              nb::gil_scoped_release release;
              records = self.run(steps, thermo_every, census);
            }
            nb::list result;
            for (const auto& record : records) {
              nb::dict entry;
              entry["step"] = record.step;
              entry["temperature"] = record.temperature;
              entry["potential_energy"] = record.potential_energy;
              entry["pressure"] = record.pressure;
              entry["total_energy"] = record.total_energy;
              result.append(entry);
            }
            return result;
          },
          "steps"_a, "thermo_every"_a, "census"_a = false)
      .def("gather",
           [](const minimd::LennardJones& self) {
             minimd::GatheredAtoms atoms;
             {
               nb::gil_scoped_release release;
               atoms = self.gather();
             }
             return nb::make_tuple(numpy_array(std::move(atoms.tags)), numpy_rows_of_3(std::move(atoms.positions)),
                                   numpy_rows_of_3(std::move(atoms.velocities)));
           })
      .def_prop_ro("step", &minimd::LennardJones::step)
      .def_prop_ro("atoms", &minimd::LennardJones::atoms)
      .def_prop_ro("grid", &minimd::LennardJones::grid)
      .def_prop_ro("owned_atoms", &minimd::LennardJones::owned_atoms)
      .def_prop_ro("ghost_atoms", &minimd::LennardJones::ghost_atoms)
      .def_prop_ro("neighbour_pairs", &minimd::LennardJones::neighbour_pairs)
      .def_prop_ro("largest_border_message", &minimd::LennardJones::largest_border_message)
      .def_prop_ro("migration_hops", &minimd::LennardJones::migration_hops)
      .def_prop_ro("census",
                   [](const minimd::LennardJones& self) {
                     nb::list result;
                     for (const auto& entry : self.census())
                       result.append(nb::make_tuple(entry.step, entry.atoms, entry.tag_sum));
                     return result;
                   })
      .def_prop_ro("times",
                   [](const minimd::LennardJones& self) {
                     const auto& times = self.times();
                     nb::dict result;
                     result["steps"] = times.steps;
                     result["total"] = times.total;
                     result["communication"] = times.communication;
                     result["force"] = times.force;
                     result["neighbour"] = times.neighbour;
                     result["thermo"] = times.thermo;
                     return result;
                   })
      .def("reset_times", &minimd::LennardJones::reset_times);

  nb::class_<hybridfd::Halo>(m, "Halo")
      .def(
          "__init__",
          [](hybridfd::Halo* self, std::shared_ptr<hybridfd::Decomposition> decomposition,
             const std::optional<hybridfd::Offset>& widths, bool corners,
             const std::optional<hybridfd::Stencil>& stencil, const std::string& approach, const std::string& model,
             std::optional<int> threads, std::optional<double> master_share, const std::string& schedule,
             const std::string& transport, std::optional<int> batch, std::optional<int> slope,
             const std::string& slope_kind, std::optional<int> progress) {
            const hybridfd::Options options{approach,  model, threads, master_share, schedule,
                                            transport, batch, slope,   slope_kind,   progress};
            if (stencil)
              new (self) hybridfd::Halo(std::move(decomposition), *stencil, options);
            else
              new (self) hybridfd::Halo(std::move(decomposition), widths.value_or(hybridfd::Offset{1, 1, 1}), corners,
                                        options);
          },
          "decomposition"_a, "widths"_a, "corners"_a, "stencil"_a, "approach"_a, "model"_a = "",
          "threads"_a = nb::none(), "master_share"_a = nb::none(), "schedule"_a = "", "transport"_a = "",
          "batch"_a = nb::none(), "slope"_a = nb::none(), "slope_kind"_a = "", "progress"_a = nb::none(),
          nb::call_guard<nb::gil_scoped_release>())
      .def(
          "exchange",
          [](hybridfd::Halo& self, const Array& padded, bool writable,
             const std::optional<hybridfd::BlochPhases>& phases) {
            const std::string dtype = dtype_name(padded.dtype());
            const hybridfd::ArrayRef view_of = view(padded, dtype, writable);
            nb::gil_scoped_release release;
            self.exchange(view_of, phases ? &*phases : nullptr);
          },
          "padded"_a, "writable"_a, "phases"_a = nb::none())
      .def(
          "pipeline",
          [](hybridfd::Halo& self, const Array& padded, bool writable, const hybridfd::Halo::Compute& compute,
             const std::optional<hybridfd::BlochPhases>& phases) {
            const std::string dtype = dtype_name(padded.dtype());
            const hybridfd::ArrayRef view_of = view(padded, dtype, writable);
            nb::gil_scoped_release release;
            self.pipeline(view_of, compute, phases ? &*phases : nullptr);
          },
          "padded"_a, "writable"_a, "compute"_a, "phases"_a = nb::none())
      .def(
          "start",
          [](hybridfd::Halo& self, const Array& padded, bool writable,
             const std::optional<hybridfd::BlochPhases>& phases) {
            const std::string dtype = dtype_name(padded.dtype());
            const hybridfd::ArrayRef view_of = view(padded, dtype, writable);
            nb::gil_scoped_release release;
            self.start(view_of, phases ? &*phases : nullptr);
          },
          "padded"_a, "writable"_a, "phases"_a = nb::none())
      .def("finish", &hybridfd::Halo::finish, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("started", &hybridfd::Halo::started)
      .def_prop_ro("widths", [](const hybridfd::Halo& self) { return self.plan().widths(); })
      .def_prop_ro("padded_extent", [](const hybridfd::Halo& self) { return self.plan().padded_extent(); })
      .def_prop_ro("messages",
                   [](const hybridfd::Halo& self) {
                     nb::list result;
                     for (const auto& face : self.plan().faces())
                       result.append(nb::make_tuple(face.direction, face.neighbour, face.lanes));
                     return result;
                   })
      .def_prop_ro("config", [](const hybridfd::Halo& self) { return config_dict(self.config()); });

  nb::class_<hybridfd::Operator>(m, "Operator")
      .def(
          "__init__",
          [](hybridfd::Operator* self, std::shared_ptr<hybridfd::Decomposition> decomposition,
             const hybridfd::Stencil& stencil, const std::string& approach, const std::string& model,
             std::optional<int> threads, std::optional<double> master_share, const std::string& schedule,
             const std::string& transport, std::optional<int> batch, std::optional<int> slope,
             const std::string& slope_kind, std::optional<int> progress) {
            new (self) hybridfd::Operator(
                std::move(decomposition), stencil,
                {approach, model, threads, master_share, schedule, transport, batch, slope, slope_kind, progress});
          },
          "decomposition"_a, "stencil"_a, "approach"_a, "model"_a = "", "threads"_a = nb::none(),
          "master_share"_a = nb::none(), "schedule"_a = "", "transport"_a = "", "batch"_a = nb::none(),
          "slope"_a = nb::none(), "slope_kind"_a = "", "progress"_a = nb::none(),
          nb::call_guard<nb::gil_scoped_release>())
      .def(
          "apply",
          [](hybridfd::Operator& self, const Array& in, const Array& out, bool out_writable,
             const std::optional<hybridfd::BlochPhases>& phases) {
            std::array<std::string, 2> names;
            const auto [in_view, out_view] = views(in, out, out_writable, names);
            nb::gil_scoped_release release;
            self.apply(in_view, out_view, phases ? &*phases : nullptr);
          },
          "input"_a, "output"_a, "output_writable"_a, "phases"_a = nb::none())
      .def_prop_ro("phase_times",
                   [](const hybridfd::Operator& self) {
                     const auto& times = self.phase_times();
                     nb::dict result;
                     result["applies"] = times.applies;
                     result["total"] = times.total;
                     result["compute_phases"] = times.compute_phases;
                     result["communication_phases"] = times.communication_phases();
                     result["thread_busy"] = times.thread_busy;
                     result["idle_in_compute"] = times.idle_in_compute();
                     return result;
                   })
      .def("reset_phase_times", &hybridfd::Operator::reset_phase_times)
      .def("start_trace", &hybridfd::Operator::start_trace, "events_per_thread"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def("stop_trace", &hybridfd::Operator::stop_trace)
      .def("trace", [](const hybridfd::Operator& self) { return trace_dict(self.tracer()); })
      .def_prop_ro("config", [](const hybridfd::Operator& self) { return config_dict(self.config()); });

#ifdef HYBRIDFD_TESTING
  hybridfd_bindings::add_test_hooks(m);
#endif
}
