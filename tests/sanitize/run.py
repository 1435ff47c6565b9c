"""The C++ core under AddressSanitizer + UndefinedBehaviorSanitizer (`make sanitize`,
docs/testing.md): the C++ tests and a sweep of hybridfd-bench configurations under
mpiexec, every one built with -fsanitize=address,undefined (cmake -DHYBRIDFD_SANITIZE=ON).

    python tests/sanitize/run.py [--build build/sanitize] [--quick] [--ranks 1 2 4] [--list]

A run passes when it exits 0 and prints no sanitizer report; hybridfd-bench also checks
its result bit for bit against the stencil evaluated on its formula field (--check on),
so a read of a lane that was never written (message buffers are not zeroed; see the
malloc fill below) that reaches a result fails it too. The sweep is deterministic:
geometry (radii 1..6, both dtypes, boxes exactly the radius thick, rows shorter than a
vector, of every length modulo 4 and long enough for several y-bands, uneven splits,
periodic or not on each axis, approaches rotated), then every model x schedule x
transport the registry supports at each rank count with the other choices (dtype, batch,
slope, radius, periodicity, threads, progress, master share) rotated among them, then
every approach preset as it is. --quick runs about a quarter of it (a few minutes).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from hybridfd import launch

ROOT = Path(__file__).resolve().parents[2]

# abort_on_error: a report kills the rank with SIGABRT, so mpiexec ends the whole job
# instead of the other ranks waiting in a collective. malloc_fill_byte=255 with no size
# limit: every allocation the program does not initialise (message buffers, which are not
# zeroed) starts as NaNs, so a lane read before it is written reaches the result and
# hybridfd-bench's bit-for-bit check fails (ASan fills only the first 4 KiB by default).
# LeakSanitizer stays on: with the mpich wheel (5.0.2) it reports nothing of MPICH's at
# exit, so detect_leaks=0 is not needed. UBSan is no-recover at compile time;
# print_stacktrace puts a stack in its report.
SANITIZER_ENVIRONMENT = {
    "ASAN_OPTIONS": ":".join(
        [
            "abort_on_error=1",
            "detect_stack_use_after_return=1",
            "malloc_fill_byte=255",
            "max_malloc_fill_size=2147483647",
        ]
    ),
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    "OMP_WAIT_POLICY": "passive",
}
REPORT_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer", "SUMMARY: ")

MODELS = ["flat", "multiple", "masteronly", "masteronly-threaded-comm", "funneled-overlap"]
SCHEDULES = ["serial-dims", "all-dims", "double-buffered", "overlap", "overlap-xy"]
TRANSPORTS = ["neighbor", "p2p", "partitioned", "persistent", "rma-fence", "rma-notify"]
TRANSPORT_MODELS = {"partitioned": {"flat", "multiple"}}  # else every model (transport.cpp)
APPROACHES = [
    "flat-original",
    "flat-optimized",
    "hybrid-multiple",
    "hybrid-master-only",
    "hybrid-master-only-threaded-comm",
    "hybrid-funneled-overlap",
]
# A process grid per rank count that cuts each axis in turn (z cut: rows exactly r long).
GRIDS = {1: [(1, 1, 1)], 2: [(2, 1, 1), (1, 2, 1), (1, 1, 2)], 4: [(4, 1, 1), (1, 2, 2), (2, 1, 2), (1, 1, 4)]}


@dataclass
class Case:
    ranks: int
    args: list[str]

    def text(self) -> str:
        return f"-n {self.ranks} hybridfd-bench {' '.join(self.args)}"


def geometry_cases(ranks_list: list[int], quick: bool) -> list[Case]:
    """Radii 1..6 x dtypes x per rank count: boxes exactly r thick on every cut axis, one
    point more (uneven splits: the last rank's box differs), rows shorter than a vector,
    long rows of every length modulo 4 (the kernel's sliding and end paths) and rows long
    enough that the kernel splits y into several bands, periodic on all, none or some
    axes; the approach rotated among flat-original, flat-optimized and two threaded ones
    (threads split boxes by x-slabs)."""
    approaches = [
        ["--approach", "flat-original"],
        ["--approach", "flat-optimized"],
        ["--approach", "hybrid-master-only", "--threads", "2"],
        ["--approach", "hybrid-multiple", "--threads", "2"],
    ]
    cases = []
    radii = [1, 3, 6] if quick else [1, 2, 3, 4, 5, 6]
    for ranks, radius, dtype in itertools.product(ranks_list, radii, ["float64", "complex128"]):
        grids = GRIDS[ranks]
        for variant in [radius % 5] if quick else range(5):
            grid = grids[(radius + variant) % len(grids)]
            r = radius
            if variant == 0:  # every box exactly r thick, periodic: every face a message or self
                shape, periodic = [p * r for p in grid], "xyz"
            elif variant == 1:  # uneven cuts (one box a point thicker); uncut axes 1-3 points,
                # thinner than r (no exchange, non-periodic): rows shorter than a vector
                shape = [p * r + 1 if p > 1 else 1 + (r + axis) % 3 for axis, p in enumerate(grid)]
                periodic = "none"
            elif variant == 2:  # long rows not a multiple of 4 (sliding with ends), mixed periodicity
                shape = [p * (r + 1) for p in grid[:2]] + [grid[2] * (8 * r + 3) + r % 4]
                periodic = ["xz", "y", "z", "xy", "none", "yz"][r - 1]
            elif variant == 3:  # rows of 4k + 1..3 lanes, near the sliding minimum; uneven y
                shape = [grid[0] * (r + 2), grid[1] * r + 1, grid[2] * (2 * r + 2) + 1 + r % 3]
                periodic = ["z", "xyz", "x", "none", "y", "xz"][r - 1]
            else:  # rows of 3,000+ lanes: several y-bands per plane (blocking_budget_bytes)
                shape = [grid[0] * r + 1, grid[1] * (r + 3), grid[2] * 1500 + 2 * r + 1]
                periodic = ["y", "none", "xz", "xyz", "z", "x"][r - 1]
            args = ["--grid", *map(str, grid), "--shape", *map(str, shape), "--radius", str(r)]
            count = 1 + variant % 3
            args += ["--dtype", dtype, "--periodic", periodic, "--grids", str(count)]
            approach = approaches[(variant + r) % len(approaches)]
            # One batch of all the grids: the message buffers' slots are filled to their end.
            batch = [] if approach[1] == "flat-original" else ["--batch", str(count), "--slope", "0"]
            args += approach + batch
            cases.append(Case(ranks, args))
    return cases


def batch_size(batch: int, slope: int, kind: str, index: int) -> int:
    """Grids in batch `index` of an apply (BatchShape::size in cpp/src/batches.cpp)."""
    if index >= slope:
        return batch
    return batch >> (slope - index) if kind == "geometric" else batch * (index + 1) // (slope + 1)


def transport_cases(ranks_list: list[int], quick: bool) -> list[Case]:
    """Every model x schedule x transport the registry supports at each rank count (quick:
    each combination once, rank counts rotated), the rest rotated among them."""
    combos = [
        (m, s, t) for m, s, t in itertools.product(MODELS, SCHEDULES, TRANSPORTS) if m in TRANSPORT_MODELS.get(t, {m})
    ]
    batches = [("1", "0", "geometric"), ("3", "1", "geometric"), ("7", "2", "linear"), ("2", "0", "geometric")]
    cases = []
    for index, (model, schedule, transport) in enumerate(combos):
        for ranks in [ranks_list[index % len(ranks_list)]] if quick else ranks_list:
            turn = index + ranks
            batch, slope, kind = batches[turn % len(batches)]
            radius = 1 + turn % 3
            grid = GRIDS[ranks][turn % len(GRIDS[ranks])]
            shape = [p * radius + (turn + axis) % 3 for axis, p in enumerate(grid)]
            args = ["--approach", "flat-optimized", "--model", model, "--schedule", schedule]
            args += ["--transport", transport, "--batch", batch, "--slope", slope, "--slope-kind", kind]
            args += ["--grid", *map(str, grid), "--shape", *map(str, shape), "--radius", str(radius)]
            # Enough grids for the ramp and one full batch (the slots filled to their end),
            # the last batch clipped or not.
            count = sum(batch_size(int(batch), int(slope), kind, index) for index in range(int(slope) + 1))
            args += ["--dtype", ["float64", "complex128"][turn % 2], "--grids", str(count + turn % 3)]
            args += ["--periodic", ["xyz", "none", "xz", "y"][turn % 4]]
            if model != "flat":
                args += ["--threads", str(2 + turn % 2)]
            if model == "funneled-overlap" and turn % 2:
                args += ["--master-share", "0.5"]
            if schedule.startswith("overlap") and turn % 2:
                args += ["--progress", "1"]
            cases.append(Case(ranks, args))
    return cases


def approach_cases(ranks_list: list[int]) -> list[Case]:
    """Every approach preset as it is (its schedule, batch and slope), 2 threads."""
    cases = []
    for ranks, approach in itertools.product(ranks_list, APPROACHES):
        threads = ["--threads", "2"] if approach.startswith("hybrid") else []
        cases.append(Case(ranks, ["--approach", approach, "--grids", "9", "--shape", "13", "10", "11", *threads]))
    return cases


def run_case(bench: Path, case: Case, timeout: float) -> tuple[bool, str, float]:
    result = launch.run(
        case.ranks,
        [str(bench), *case.args, "--repeats", "1", "--check", "on"],
        timeout=timeout,
        extra_env=SANITIZER_ENVIRONMENT,
    )
    reported = any(marker in result.output for marker in REPORT_MARKERS)
    ok = result.returncode == 0 and not result.timed_out and not reported
    if ok and '"bit_identical_to_reference":true' not in result.output.replace(" ", ""):
        ok = False
    return ok, result.output, result.seconds


def run_program(ranks: int | None, argv: list[str], timeout: float, expect: str) -> tuple[bool, str, float]:
    if ranks is None:
        import subprocess

        start = time.perf_counter()
        env = dict(os.environ, **SANITIZER_ENVIRONMENT)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
        output, code, seconds = done.stdout + done.stderr, done.returncode, time.perf_counter() - start
    else:
        result = launch.run(ranks, argv, timeout=timeout, extra_env=SANITIZER_ENVIRONMENT)
        output, code, seconds = result.output, (124 if result.timed_out else result.returncode), result.seconds
    reported = any(marker in output for marker in REPORT_MARKERS)
    return code == 0 and not reported and expect in output, output, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "sanitize", help="make sanitize's build tree")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--quick", action="store_true", help="the subset `make test` runs")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per launch")
    parser.add_argument("--list", action="store_true", help="print the bench cases and exit")
    args = parser.parse_args(argv)

    bench = args.build / "cpp" / "tools" / "hybridfd-bench"
    tests = args.build.parent / (args.build.name + "-tests")
    cases = geometry_cases(args.ranks, args.quick) + transport_cases(args.ranks, args.quick)
    if not args.quick:
        cases += approach_cases(args.ranks)
    if args.list:
        for case in cases:
            print(case.text())
        return 0

    programs: list[tuple[str, int | None, list[str], str]] = [
        ("kernel_box_input_test", None, [str(tests / "kernel_box_input_test")], "ok"),
        ("thread_team_test", None, [str(tests / "thread_team_test")], "ok"),
    ]
    for ranks in args.ranks:
        programs.append((f"tracer_test -n {ranks}", ranks, [str(tests / "tracer_test")], "ok"))
        if not args.quick or ranks == max(args.ranks):
            programs.append((f"models_test -n {ranks}", ranks, [str(tests / "models_test"), "2"], "ok ("))

    start = time.perf_counter()
    failures = []
    for name, ranks, program, expect in programs:
        ok, output, seconds = run_program(ranks, program, args.timeout, expect)
        print(f"{'ok  ' if ok else 'FAIL'} {seconds:6.1f} s  {name}", flush=True)
        if not ok:
            failures.append((name, output))
    for index, case in enumerate(cases):
        ok, output, seconds = run_case(bench, case, args.timeout)
        print(f"{'ok  ' if ok else 'FAIL'} {seconds:6.1f} s  [{index + 1}/{len(cases)}] {case.text()}", flush=True)
        if not ok:
            failures.append((case.text(), output))
    for name, output in failures:
        print(f"\n===== FAILED: {name}\n{output}", flush=True)
    total = len(programs) + len(cases)
    print(f"sanitize: {total - len(failures)}/{total} runs clean in {time.perf_counter() - start:.0f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
