"""Validation of the simulation (docs/simulation.md, "Validation on the host platform"):
the same hybridfd-bench configuration measured under the real MPI and simulated by SMPI on
the host platform, at 2 and 4 ranks, flat-original and flat-optimized; prints the error
per row.

The host platform's costs are measured in the same rounds as the runs they predict
(timings here swing 2x within a minute while others build):

- core speed, per rank count: one rank's share of the problem (its box of the process
  grid the real run used, all grids) applied by one one-rank driver per core, started at
  once, so that the rate is that of all cores busy, with each rank's own working set and
  the halo copies of its faces (the one-rank apply of the whole problem has neither: the
  ``first`` model below, off by -28 to -71 %);
- latency and bandwidth: hybridfd.perfmodel.calibrate's ping-pong fit on 2 ranks;
- CPU time per message: calibrate.message_seconds (the core's own exchange), charged by
  SMPI as send and receive overhead.

The host platform is this machine as it is: one node with the cores of the affinity mask
(platform.host_topology), every rank on it; SimGrid shares a host's cores fairly among
the ranks computing at a time (4 ranks on 2 cores: half a core each), as the OS shares
them here. What processor sharing leaves out is shown beside each row: the CPU time the
real run spends per apply, all ranks together (getrusage of the finished ranks, the
difference of a short and a long run, so start-up cancels), against the stencil's CPU
time (ranks x one rank's share); the rest is MPI progress polling, yields and context
switches of ranks waiting for a partner, which a waiting simulated rank does not spend.

``--model`` picks the models set beside the measurement (default both): ``shares``, the
one above; ``first``, the simple one (the one-rank apply of the whole problem as the core
speed, no per-message overhead).

Measuring on a shared machine: each round holds the
shared lock (``--lock``, flock(2), the same lock as `flock /tmp/hybridfd-measure.lock`),
and every measured process of a run with at most as many ranks as cores (the host costs,
the one-rank and concurrent-share drivers, the 2-rank runs) runs at real-time priority
(``chrt -f``, ``--realtime``); runs with more ranks than cores (4 ranks on 2 cores) hold the
lock only: real-time ranks that poll would starve the machine. Needs `make setup`, the driver built
with the real MPI in build/tools (cmake -S . -B build/tools -DHYBRIDFD_PYTHON=OFF
-DMPI_HOME=$PWD/.venv) and `make smpi`.

    .venv/bin/python benchmarks/simulation_validation.py --rounds 5
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator

from hybridfd import launch
from hybridfd.simulate import driver, platform, smpi

DRIVER = "build/tools/cpp/tools/hybridfd-bench"
SMPI_DRIVER = "build/smpi/cpp/tools/hybridfd-bench"
GRIDS, SIZE = 16, 48
PROBLEM = ["--grids", str(GRIDS), "--repeats", "7", "--check", "off"]
APPROACHES = ("flat-original", "flat-optimized")
FLOPS_PER_POINT = 19  # cpp/tools/simulation.hpp: 13-point stencil, float64
LOCK = "/tmp/hybridfd-measure.lock"
#: The prefix of measured processes that get a core each (set by main: chrt -f N, or nothing).
REALTIME: list[str] = []
HOST_COSTS = (
    "from mpi4py import MPI\n"
    "from hybridfd import launch\n"
    "from hybridfd.perfmodel import calibrate as c\n"
    "t = c.pingpong(MPI.COMM_WORLD)\n"
    "latency, bandwidth = c.fit_hockney(c.SIZES, t)[:2]\n"
    "message = c.message_seconds(MPI.COMM_WORLD, latency)\n"
    "if MPI.COMM_WORLD.rank == 0: launch.report_result([latency, bandwidth, message])\n"
)


def record(output: str) -> dict:
    return json.loads(next(line for line in output.splitlines() if line.startswith('{"format"')))["rows"][0]


def prefix(ranks: int) -> list[str]:
    """Real-time priority for a run whose ranks each have a core; none for more ranks."""
    return REALTIME if ranks <= len(os.sched_getaffinity(0)) else []


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold the shared measurement lock (flock(2), as flock(1) takes it)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def measured(ranks: int, approach: str) -> dict:
    result = launch.run(
        ranks, [*prefix(ranks), DRIVER, *PROBLEM, "--shape", str(SIZE), "--approach", approach], timeout=300
    )
    if result.returncode != 0:
        raise RuntimeError(result.output)
    return record(result.output)


def cpu_per_apply_ms(ranks: int, approach: str, applies: int = 200) -> tuple[float, float]:
    """(CPU ms, of which system ms) all ranks of the real run spend per apply: getrusage of
    the finished ranks for a run of 10 applies and one of 10 + ``applies``, differenced
    (start-up, allocation and the first applies cancel)."""
    cpu, system = [], []
    for repeats in (10, 10 + applies):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        command = [
            *prefix(ranks),
            DRIVER,
            *PROBLEM,
            "--repeats",
            str(repeats),
            "--shape",
            str(SIZE),
            "--approach",
            approach,
        ]
        if launch.run(ranks, command, timeout=300).returncode != 0:
            raise RuntimeError(f"{command} failed")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        system.append(after.ru_stime - before.ru_stime)
        cpu.append(after.ru_utime - before.ru_utime + system[-1])
    return 1e3 * (cpu[1] - cpu[0]) / applies, 1e3 * (system[1] - system[0]) / applies


def concurrent_share_ms(ranks: int, process_grid: list[int]) -> float:
    """Slowest of ``ranks`` one-rank drivers started at once, each applying one rank's box
    (the largest of the split) of all grids, periodic (its faces are copies). At most one
    per core: time-shared processes each time an apply within their own time slice, so
    more would measure a whole core's rate; SimGrid shares the cores among ranks itself."""
    extent = max(driver.boxes((SIZE,) * 3, process_grid), key=lambda box: box[1][0] * box[1][1] * box[1][2])[1]
    command = [*prefix(ranks), DRIVER, *PROBLEM, "--shape", *map(str, extent), "--approach", "flat-original"]
    env = launch.environment()
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) for _ in range(ranks)]
    return max(record(p.communicate(timeout=300)[0])["median_ms"] for p in processes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians are reported")
    parser.add_argument("--model", choices=("first", "shares"), nargs="+", default=["first", "shares"])
    parser.add_argument("--lock", default=LOCK, help=f"the shared measurement lock held by each round (default {LOCK})")
    parser.add_argument(
        "--realtime", type=int, default=40, help="chrt -f priority of measured runs of <= cores ranks (0: none)"
    )
    args = parser.parse_args(argv)
    REALTIME[:] = ["chrt", "-f", str(args.realtime)] if args.realtime else []
    cores = len(os.sched_getaffinity(0))
    with locked(args.lock):
        host = launch.run(2, [*prefix(2), sys.executable, "-c", HOST_COSTS], timeout=300)
    latency, bandwidth, message = launch.worker_result(host)
    costs = f"latency {latency * 1e6:.2f} us, bandwidth {bandwidth / 1e9:.2f} GB/s, {message * 1e6:.2f} us per message"
    print(f"host: {costs}")
    samples: dict[tuple, list[float]] = {}
    for _ in range(args.rounds):
        with locked(args.lock):
            load = measure_round(args, cores, latency, bandwidth, message, samples)
        print(f"round done, load {load:.2f}", flush=True)
    report(args, samples)
    return 0


def measure_round(
    args: argparse.Namespace, cores: int, latency: float, bandwidth: float, message: float, samples: dict
) -> float:
    """One interleaved round (under the lock): measured runs, the host costs, the simulations."""
    load = os.getloadavg()[0]
    samples.setdefault(("load",), []).append(load)
    whole = launch.run(1, [*prefix(1), DRIVER, *PROBLEM, "--shape", str(SIZE)], timeout=300)
    whole_ms = record(whole.output)["median_ms"]
    first = platform.host_machine(GRIDS * SIZE**3 * FLOPS_PER_POINT / (whole_ms / 1e3), latency, bandwidth)
    for ranks in (2, 4):
        rows = {approach: measured(ranks, approach) for approach in APPROACHES}
        share_ms = concurrent_share_ms(min(ranks, cores), rows[APPROACHES[0]]["process_grid"])
        # One rank's share of the problem took share_ms on a core while every core was busy.
        speed = GRIDS * SIZE**3 * FLOPS_PER_POINT / ranks / (share_ms / 1e3)
        models = {"first": first, "shares": platform.host_machine(speed, latency, bandwidth, message)}
        samples.setdefault((ranks, "share"), []).append(share_ms)
        for approach in APPROACHES:
            samples.setdefault((ranks, approach, "measured"), []).append(rows[approach]["median_ms"])
            cpu_ms, system_ms = cpu_per_apply_ms(ranks, approach)
            samples.setdefault((ranks, approach, "cpu"), []).append(cpu_ms)
            samples.setdefault((ranks, approach, "system"), []).append(system_ms)
            for name in args.model:
                with tempfile.TemporaryDirectory() as directory:
                    arguments = [*PROBLEM, "--shape", str(SIZE), "--approach", approach, "--compute", "modelled"]
                    simulated = smpi.run(
                        ranks, platform.host_topology(), models[name], arguments, directory, SMPI_DRIVER
                    )
                samples.setdefault((ranks, approach, name), []).append(simulated["rows"][0]["median_ms"])
    return load


def report(args: argparse.Namespace, samples: dict) -> None:
    """The medians' table (markdown)."""

    def median(*key: object) -> float:
        return statistics.median(samples[key])

    print(
        f"\nmedians of {args.rounds} rounds, load average {min(samples[('load',)]):.1f}-{max(samples[('load',)]):.1f}"
    )
    header = " | ".join(f"{name} simulated ms | {name} error" for name in args.model)
    print(
        "| ranks | approach | measured ms | real CPU ms per apply (system) | stencil CPU ms (ranks x share) "
        f"| {header} |"
    )
    print("| --- " * (5 + 2 * len(args.model)) + "|")
    for ranks in (2, 4):
        for approach in APPROACHES:
            real = median(ranks, approach, "measured")
            cells = []
            for name in args.model:
                simulated = median(ranks, approach, name)
                cells += [f"{simulated:.2f}", f"{100 * (simulated - real) / real:+.0f} %"]
            cpu = f"{median(ranks, approach, 'cpu'):.2f} ({median(ranks, approach, 'system'):.2f})"
            stencil = f"{ranks * median(ranks, 'share'):.2f} ({ranks} x {median(ranks, 'share'):.2f})"
            print(f"| {ranks} | {approach} | {real:.2f} | {cpu} | {stencil} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
