"""Validation of the simulation (docs/simulation.md, section 4): the same hybridfd-bench
configuration measured under the real MPI and simulated by SMPI on the host platform, at
2 and 4 ranks, flat-original and flat-optimized; prints the error per row.

The host platform's costs are measured first: the core speed from the driver's one-rank
apply (stencil flops per second, pack and copies included) and the latency and bandwidth
from hybridfd.perfmodel.calibrate's ping-pong fit on 2 ranks. Needs `make setup`, the
driver built with the real MPI in build/tools (cmake -S . -B build/tools
-DHYBRIDFD_PYTHON=OFF -DMPI_HOME=$PWD/.venv) and `make smpi`.

    .venv/bin/python benchmarks/simulation_validation.py
"""

from __future__ import annotations

import json
import re
import sys
import tempfile

from hybridfd import launch
from hybridfd.simulate import platform, smpi

DRIVER = "build/tools/cpp/tools/hybridfd-bench"
SMPI_DRIVER = "build/smpi/cpp/tools/hybridfd-bench"
PROBLEM = ["--grids", "16", "--shape", "48", "--repeats", "7", "--check", "off"]
PINGPONG = (
    "from mpi4py import MPI\n"
    "from hybridfd.perfmodel import calibrate as c\n"
    "t = c.pingpong(MPI.COMM_WORLD)\n"
    "if MPI.COMM_WORLD.rank == 0: print('hockney', *c.fit_hockney(c.SIZES, t)[:2])\n"
)


def measured_ms(ranks: int, arguments: list[str]) -> float:
    result = launch.run(ranks, [DRIVER, *PROBLEM, *arguments], timeout=300)
    record = next(line for line in result.output.splitlines() if line.startswith('{"format"'))
    return json.loads(record)["rows"][0]["median_ms"]


def main() -> int:
    output = launch.run(2, [sys.executable, "-c", PINGPONG], timeout=300).output
    latency, bandwidth = (float(v) for v in re.search(r"hockney (\S+) (\S+)", output).groups())
    one_rank = measured_ms(1, ["--approach", "flat-original"])
    speed = 16 * 48**3 * 19 / (one_rank / 1e3)
    machine = platform.host_machine(speed, latency, bandwidth)
    print(
        f"host: latency {latency * 1e6:.2f} us, bandwidth {bandwidth / 1e9:.2f} GB/s, one-rank apply "
        f"{one_rank:.2f} ms -> core speed {speed / 1e9:.3f} Gflop/s"
    )
    print("| ranks | approach | measured ms | simulated ms | error |")
    print("| --- | --- | --- | --- | --- |")
    for ranks in (2, 4):
        for approach in ("flat-original", "flat-optimized"):
            measured = measured_ms(ranks, ["--approach", approach])
            with tempfile.TemporaryDirectory() as directory:
                arguments = [*PROBLEM, "--approach", approach, "--compute", "modelled"]
                record = smpi.run(ranks, platform.host_topology(), machine, arguments, directory, SMPI_DRIVER)
            simulated = record["rows"][0]["median_ms"]
            error = 100 * (simulated - measured) / measured
            print(f"| {ranks} | {approach} | {measured:.2f} | {simulated:.2f} | {error:+.0f} % |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
