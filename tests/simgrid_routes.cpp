// Prints SimGrid's own route between pairs of hosts of a platform: reads "a b" (node
// numbers of hosts node-a, node-b) per line on stdin, writes "a b link link ..." with the
// directed links in route order. Built and used by tests/test_smpi.py, to compare the
// generated platforms' routes with hybridfd.mapping's dimension-ordered routing.
#include <iostream>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

int main(int argc, char** argv) {
  sg4::Engine engine(&argc, argv);
  engine.load_platform(argv[1]);
  // Routes are complete only once the platform is sealed, i.e. inside a run.
  sg4::Actor::create("router", engine.host_by_name("node-0"), [&engine]() {
    long a = 0;
    long b = 0;
    while (std::cin >> a >> b) {
      std::vector<sg4::Link*> links;
      double latency = 0;
      engine.host_by_name("node-" + std::to_string(a))
          ->route_to(engine.host_by_name("node-" + std::to_string(b)), links, &latency);
      std::cout << a << ' ' << b;
      for (const auto* link : links) std::cout << ' ' << link->get_name();
      std::cout << '\n';
    }
  });
  engine.run();
  return 0;
}
