#include "bench_options.hpp"

#include <charconv>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <string_view>

#include "hybridfd/errors.hpp"

namespace hybridfd::tools {
namespace {

template <class Number>
Number number(std::string_view option, std::string_view text) {
  Number value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range)
    throw ValueError(std::string(option) + ": " + std::string(text) + " is out of range (at most " +
                     std::to_string(std::numeric_limits<Number>::max()) + ")");
  if (error != std::errc{} || end != text.data() + text.size())
    throw ValueError(std::string(option) + ": '" + std::string(text) + "' is not a number");
  return value;
}

template <class Number>
Number at_least(std::string_view option, std::string_view text, Number minimum) {
  const Number value = number<Number>(option, text);
  if (value < minimum)
    throw ValueError(std::string(option) + ": " + std::string(text) + " must be at least " + std::to_string(minimum));
  return value;
}

std::array<bool, 3> periodic_axes(std::string_view text) {
  std::array<bool, 3> axes{};
  if (text == "none") return axes;
  for (char c : text) {
    if (c < 'x' || c > 'z') throw ValueError("--periodic: '" + std::string(text) + "' is not a subset of xyz or none");
    axes[c - 'x'] = true;
  }
  return axes;
}

}  // namespace

std::string usage() {
  return "usage: hybridfd-bench [options]   (the options of `hybridfd run`, docs/cli.md)\n"
         "problem:  --grids G  --shape N | NX NY NZ  --dtype float64|complex128  --periodic xyz|none|subset\n"
         "          --radius R  --spacing H  --grid PX PY PZ\n"
         "operator: --approach NAME  --model NAME  --threads T  --master-share F  --schedule NAME\n"
         "          --transport NAME  --batch B  --slope N  --slope-kind geometric|linear  --progress K\n"
         "at scale: --grid-groups K  --node-cores K  --sync-per-batch S  --sync-per-apply S\n"
         "          --halo-copy-per-lane S (modelled compute)\n"
         "run:      --repeats N  --check auto|on|off  --compute real|modelled (modelled: SMPI build only)\n"
         "          --output PATH (the JSON record, also printed on stdout)\n";
}

std::optional<BenchOptions> parse_options(int argc, char** argv, bool print_help) {
  BenchOptions options;
  options.argv.assign(argv, argv + argc);
  // Each option consumes the values after it up to the next "--" option.
  using Handler = std::function<void(std::string_view, const std::vector<std::string_view>&)>;
  auto one = [](std::function<void(std::string_view, std::string_view)> set) -> std::pair<std::size_t, Handler> {
    return {1, [set](std::string_view name, const std::vector<std::string_view>& values) { set(name, values[0]); }};
  };
  const std::map<std::string_view, std::pair<std::size_t, Handler>> handlers{
      {"--grids", one([&](auto name, auto v) { options.grids = at_least<std::int64_t>(name, v, 1); })},
      {"--dtype", one([&](auto, auto v) { options.dtype = std::string(v); })},
      {"--periodic", one([&](auto, auto v) { options.periodic = periodic_axes(v); })},
      {"--radius", one([&](auto name, auto v) { options.radius = at_least<int>(name, v, 1); })},
      {"--spacing", one([&](auto name, auto v) {
         options.spacing = number<double>(name, v);
         if (!(options.spacing > 0)) throw ValueError("--spacing: " + std::string(v) + " must be greater than 0");
       })},
      {"--approach", one([&](auto, auto v) { options.op.approach = std::string(v); })},
      {"--model", one([&](auto, auto v) { options.op.model = std::string(v); })},
      {"--threads", one([&](auto name, auto v) { options.op.threads = at_least<int>(name, v, 1); })},
      {"--master-share", one([&](auto name, auto v) { options.op.master_share = number<double>(name, v); })},
      {"--schedule", one([&](auto, auto v) { options.op.schedule = std::string(v); })},
      {"--transport", one([&](auto, auto v) { options.op.transport = std::string(v); })},
      {"--batch", one([&](auto name, auto v) { options.op.batch = at_least<int>(name, v, 1); })},
      {"--slope", one([&](auto name, auto v) { options.op.slope = at_least<int>(name, v, 0); })},
      {"--slope-kind", one([&](auto, auto v) { options.op.slope_kind = std::string(v); })},
      {"--progress", one([&](auto name, auto v) { options.op.progress = at_least<int>(name, v, 0); })},
      {"--repeats", one([&](auto name, auto v) { options.repeats = at_least<int>(name, v, 1); })},
      {"--grid-groups", one([&](auto name, auto v) { options.grid_groups = at_least<int>(name, v, 1); })},
      {"--node-cores", one([&](auto name, auto v) { options.node_cores = at_least<int>(name, v, 1); })},
      {"--sync-per-batch", one([&](auto name, auto v) { options.sync_per_batch = at_least<double>(name, v, 0.0); })},
      {"--sync-per-apply", one([&](auto name, auto v) { options.sync_per_apply = at_least<double>(name, v, 0.0); })},
      {"--halo-copy-per-lane",
       one([&](auto name, auto v) { options.halo_copy_per_lane = at_least<double>(name, v, 0.0); })},
      {"--output", one([&](auto, auto v) { options.output = std::string(v); })},
      {"--check", one([&](auto, auto v) {
         if (v == "auto")
           options.check = Check::automatic;
         else if (v == "on")
           options.check = Check::on;
         else if (v == "off")
           options.check = Check::off;
         else
           throw ValueError("--check: '" + std::string(v) + "' is not one of auto, on, off");
       })},
      {"--compute", one([&](auto, auto v) {
         if (v == "real")
           options.compute = Compute::real;
         else if (v == "modelled")
           options.compute = Compute::modelled;
         else
           throw ValueError("--compute: '" + std::string(v) + "' is not one of real, modelled");
       })},
      {"--grid",
       {3,
        [&](auto name, const auto& v) {
          options.grid =
              ProcessGrid{at_least<int>(name, v[0], 1), at_least<int>(name, v[1], 1), at_least<int>(name, v[2], 1)};
        }}},
  };
  for (int i = 0; i < argc;) {
    const std::string_view name = argv[i++];
    std::vector<std::string_view> values;
    while (i < argc && std::string_view(argv[i]).substr(0, 2) != "--") values.emplace_back(argv[i++]);
    if (name == "--help" || name == "-h") {
      if (print_help) std::fputs(usage().c_str(), stdout);
      return std::nullopt;
    }
    if (name == "--shape") {
      if (values.size() == 1) values.assign(3, values[0]);
      if (values.size() != 3) throw ValueError("--shape takes 1 or 3 values, got " + std::to_string(values.size()));
      for (int axis = 0; axis < 3; ++axis) options.shape[axis] = at_least<std::int64_t>(name, values[axis], 1);
      continue;
    }
    const auto handler = handlers.find(name);
    if (handler == handlers.end()) throw ValueError("unknown option '" + std::string(name) + "'\n" + usage());
    if (values.size() != handler->second.first)
      throw ValueError(std::string(name) + " takes " + std::to_string(handler->second.first) + " value(s), got " +
                       std::to_string(values.size()));
    handler->second.second(name, values);
  }
  const bool team_model = options.node_cores > 1 || options.sync_per_batch > 0 || options.sync_per_apply > 0;
  if (team_model && options.compute != Compute::modelled)
    throw ValueError(
        "--node-cores, --sync-per-batch and --sync-per-apply model threads at scale: they need "
        "--compute modelled");
  if (options.halo_copy_per_lane > 0 && options.compute != Compute::modelled)
    throw ValueError("--halo-copy-per-lane charges simulated CPU time: it needs --compute modelled");
  return options;
}

}  // namespace hybridfd::tools
