"""Two revisions of the stencil kernel side by side, in one process: whether a kernel
change is faster, and by how much.

The kernel's sources (every .cpp of cpp/src/kernel/) at revision A and at revision B
(default: the working tree) are compiled by the same command, each revision's objects
combined into one, their global symbols renamed apart (apply_stencil -> apply_stencil_a
/ _b), and linked with dev/kernel_ab/harness.cpp, the probes and the core library, which
times them in alternating rounds on the same arrays and checks that every output lane
agrees bit for bit. A revision from before the kernel had its folder is refused. A
machine with other work on it moves single timings by tens of per cent; two kernels
measured alternately, fastest round each, and the median over several runs of the
harness, move together. `--realtime` runs the harness under SCHED_FIFO (chrt; needs
root): then other processes cannot take its core, only memory bandwidth.

The fastest round is the core's best state. On a VM whose vCPU shares a physical core
with another tenant's (SMT), the core is shared most of the time and a kernel then gets
about half its issue width (dev/core_sharing.py shows it). The harness probes the issue
rate before each run; the last two columns compare the kernels within the rounds where
both probes found the core alone (>= 85 % of the best probe of the whole run, which the
table's heading gives) and where both found it shared (<= 70 %): the median of the
per-round ratios, and how many rounds.

    .venv/bin/python dev/kernel_ab.py --a HEAD~1            # HEAD~1 against the working tree
    .venv/bin/python dev/kernel_ab.py --a main --b HEAD --realtime --repeats 5
    .venv/bin/python dev/kernel_ab.py --case "--n 64 --grids 64 --padded --input-in-cache"
    .venv/bin/python dev/kernel_ab.py --case "--n 48 --grids 1 --padded --told-in-cache"  # as from_memory=False
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from core_state import ALONE, SHARED, core_state

ROOT = Path(__file__).resolve().parent.parent
HARNESS = Path(__file__).resolve().parent / "kernel_ab" / "harness.cpp"
# The headers whose types the two kernels and the core library share: they must agree.
SHARED_HEADERS = tuple(
    f"cpp/include/hybridfd/{name}.hpp"
    for name in ("kernel", "halo_plan", "stencil", "array_ref", "thread_team", "errors", "domain", "decomposition")
)
# The default cases: from memory (32 x 96^3, 1 x 192^3) and in cache (8 x 24^3, 1 x 32^3),
# padded grids (benchmarks/kernel_throughput.py) and an apply's box input.
# Every array on a 64-byte line, a padded grid's interior too: where hybridfd.arrays puts
# them (`--offset 2` puts every array where numpy does, 16 bytes past one).
DEFAULT_CASES = [
    f"--dtype {dtype} {case}"
    for dtype in ("float64", "complex128")
    for case in (
        "--n 96 --grids 32 --padded --interior-on-a-line",
        "--n 96 --grids 32",
        "--n 192 --grids 1 --padded --interior-on-a-line --rounds 5",
        "--n 24 --grids 8 --repeats 20",
        "--n 32 --grids 1 --padded --interior-on-a-line --repeats 40",
    )
]
FLAGS = ["-std=c++20", "-O3", "-DNDEBUG", "-march=native", "-ffp-contract=off"]
# The compiler launcher cmake is given (the Makefile names ccache; cmake reads the same
# variable) goes before this tool's own compiles of the kernel too.
COMPILER = [*filter(None, [os.environ.get("CMAKE_CXX_COMPILER_LAUNCHER")]), "c++"]


def run(command: list[str]) -> subprocess.CompletedProcess:
    completed = subprocess.run(command, text=True, capture_output=True)
    if completed.returncode != 0:
        raise SystemExit(f"{shlex.join(command)} failed:\n{completed.stderr[-4000:]}")
    return completed


def run_json(command: list[str], what: str) -> dict:
    """The one JSON line a harness prints; exit status 1 (outputs disagree) is a result,
    anything else a failure named by ``what``."""
    completed = subprocess.run(command, text=True, capture_output=True)
    if completed.returncode not in (0, 1) or not completed.stdout.strip():
        raise SystemExit(f"{what} failed: {completed.stderr.strip()}")
    return json.loads(completed.stdout)


def best_probe(results: list[dict]) -> float:
    """The highest issue rate any round's probe found: the core alone, if it ever was."""
    return max((max(entry[0], entry[2]) for result in results for entry in result["rounds"]), default=0.0)


def by_core_state(results: list[dict], best: float) -> dict[str, tuple[float, int]]:
    """The median of b's speed over a's within the rounds where the core was alone and
    within those where it was shared (both probes of the round agreeing, measured against
    ``best``), and how many rounds each had: (nan, 0) where none."""
    rounds = [entry for result in results for entry in result["rounds"]]
    states: dict[str, list[float]] = {"alone": [], "shared": []}
    for a_issue, a_seconds, b_issue, b_seconds in rounds:
        state = core_state((a_issue, b_issue), best)
        if state:
            states[state].append(a_seconds / b_seconds)
    return {
        state: (statistics.median(ratios) if ratios else float("nan"), len(ratios)) for state, ratios in states.items()
    }


def source_tree(revision: str | None, into: Path) -> Path:
    """cpp/ of ``revision`` (None: the working tree) under ``into``."""
    if revision is None:
        return ROOT
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "cpp"], check=True, capture_output=True)
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def code_of(header: Path) -> str:
    """A header's text without comments and blank space: what the compiler sees."""
    text = re.sub(r"//[^\n]*", "", header.read_text()) if header.exists() else "(missing)"
    return " ".join(text.split())


def core_libraries(build: Path) -> list[Path]:
    """The working tree's probes (hybridfd_probes: the issue-rate probe the harnesses call)
    and core library (hybridfd_core), built as the package builds them, in link order."""
    mpi_home = ROOT / ".venv"
    run(
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(build / "core"),
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DHYBRIDFD_PYTHON=OFF",
            "-DHYBRIDFD_TOOLS=OFF",
            f"-DMPI_HOME={mpi_home}",
        ]
    )
    run(["cmake", "--build", str(build / "core"), "--target", "hybridfd_probes", "hybridfd_core"])
    return [build / "core" / "libhybridfd_probes.a", build / "core" / "libhybridfd_core.a"]


def kernel_includes(tree: Path) -> list[str]:
    return [f"-I{tree / 'cpp' / 'include'}", f"-I{tree / 'cpp' / 'src'}", f"-I{ROOT / '.venv' / 'include'}"]


def kernel_digest(tree: Path) -> str:
    """What the compiler sees of ``tree``'s kernel: flags, include paths and every source
    and header of cpp/. Two revisions whose kernel is the same compile once."""
    stamp = hashlib.sha256(" ".join([*FLAGS, *kernel_includes(Path("."))]).encode())
    for path in sorted((tree / "cpp").rglob("*.[ch]pp")):
        stamp.update(path.relative_to(tree).as_posix().encode() + b"\0" + path.read_bytes())
    return stamp.hexdigest()[:16]


def split_commit() -> str:
    """The commit that gave the kernel its folder, cpp/src/kernel/ (from git's history)."""
    added = subprocess.run(
        ["git", "-C", str(ROOT), "log", "--diff-filter=A", "--format=%h (%s)", "--", "cpp/src/kernel/sweep_choice.hpp"],
        capture_output=True,
        text=True,
    )
    commits = added.stdout.strip().splitlines()
    return commits[-1] if commits else "the commit that added cpp/src/kernel/sweep_choice.hpp"


def check_kernel_folder(tree: Path, revision: str | None) -> None:
    """Refuses a revision from before cpp/src/kernel/. Its kernel, one translation unit
    (cpp/src/kernel.cpp), compiles the inline functions it shares with a kernel of the
    folder (format.hpp's, from the same source) into other code, which the linker would
    keep one copy of for both (differing_weak_functions names them)."""
    if not (tree / "cpp" / "src" / "kernel").is_dir():
        raise SystemExit(
            f"revision {revision} predates the kernel's folder cpp/src/kernel/, made by {split_commit()}: "
            "kernel_ab compares kernels from that commit on"
        )


def kernel_sources(tree: Path) -> list[Path]:
    """The kernel's translation units in ``tree``: every .cpp of cpp/src/kernel/."""
    return sorted((tree / "cpp" / "src" / "kernel").glob("*.cpp"))


def compiled_kernel(tree: Path, digest: str, build: Path) -> Path:
    """The kernel of ``tree`` compiled into one relocatable object (reused while its
    digest, kernel_digest, is unchanged)."""
    plain = build / f"kernel_{digest}.plain.o"
    if not plain.exists():
        sources = kernel_sources(tree)
        parts = [build / f"kernel_{digest}.{index}.part.o" for index in range(len(sources))]
        # The units compile side by side, each radius's sweeps being a unit of its own so
        # that they can: one after another they take most of the tool's time.
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            commands = [
                [*COMPILER, *FLAGS, *kernel_includes(tree), "-c", str(source), "-o", str(part)]
                for source, part in zip(sources, parts, strict=True)
            ]
            list(pool.map(run, commands))
        partial = plain.with_suffix(".partial")
        # One object, so that the renaming below sees every global the kernel defines.
        run(["ld", "-r", *map(str, parts), "-o", str(partial)])
        for part in parts:
            part.unlink()
        partial.rename(plain)
    return plain


def renamed_kernel(plain: Path, side: str, build: Path) -> Path:
    """A compiled kernel with its hybridfd:: globals renamed with suffix _``side``: the
    first name after the namespace gets it (apply_stencil -> apply_stencil_a), which is
    how the harness's declarations of apply_stencil_a / _b mangle."""
    target = build / f"kernel_{side}.o"
    symbols = run(["nm", "-g", "--defined-only", "--format=posix", str(plain)]).stdout.split("\n")
    renames = []
    for line in filter(None, symbols):
        name, kind = line.split()[:2]
        # Weak symbols (inline functions, templates) are not renamed: the linker keeps one
        # copy for both kernels. That is right for the shared headers (checked to agree);
        # a private header of cpp/src whose code differs between the revisions must give
        # it internal linkage, as column_sweep.hpp does (build_harness checks).
        if kind not in "TDBR":
            continue
        match = re.match(r"_ZN8hybridfd(\d+)", name)
        if not match:
            raise SystemExit(f"the kernel defines {name} ({kind}) outside namespace hybridfd: cannot rename it")
        length = int(match.group(1))
        start = match.end()
        first = name[start : start + length]
        renames.append(f"{name} _ZN8hybridfd{length + 2}{first}_{side}{name[start + length :]}")
    table = build / f"renames_{side}.txt"
    table.write_text("\n".join(renames) + "\n")
    run(["objcopy", f"--redefine-syms={table}", str(plain), str(target)])
    return target


def local_constants(compiled: Path) -> dict[str, str]:
    """The bytes behind each local label (.LC3: a string literal, a vector constant) of
    an object, in hex: the labels are numbered per object, so two objects' code is
    compared by what its labels hold. A string runs to its NUL; any other constant to
    the section's entry size, or to the end of its section."""
    labels: dict[str, tuple[int, int]] = {}
    for line in run(["readelf", "-s", "-W", str(compiled)]).stdout.splitlines():
        fields = line.split()
        if len(fields) == 8 and fields[7].startswith(".L") and fields[6].isdigit():
            labels[fields[7]] = (int(fields[6]), int(fields[1], 16))
    entry_sizes = {}
    for line in run(["readelf", "-S", "-W", str(compiled)]).stdout.splitlines():
        section = re.match(r"\s*\[\s*(\d+)\]\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+([0-9a-f]+)\s+(\S*)", line)
        if section:
            entry_sizes[int(section.group(1))] = (int(section.group(2), 16), "S" in section.group(3))
    contents: dict[int, bytes] = {}
    for index in {index for index, _ in labels.values()}:
        dump = run(["readelf", "-x", str(index), str(compiled)]).stdout
        words = re.findall(r"^\s+0x[0-9a-f]+ ((?:[0-9a-f]+ ){1,4})", dump, re.MULTILINE)
        contents[index] = bytes.fromhex("".join(words).replace(" ", ""))
    values = {}
    for name, (index, offset) in labels.items():
        data = contents[index][offset:]
        entry_size, strings = entry_sizes.get(index, (0, False))
        if strings:
            data = data[: data.find(b"\0") + 1]
        elif entry_size:
            data = data[:entry_size]
        values[name] = data.hex()
    return values


def weak_function_bodies(compiled: Path) -> dict[str, str]:
    """The code of each weak function (inline function, template) an object defines, as
    objdump shows it: each in its own section from address 0, relocations by name (a
    local label by the bytes it holds), jump targets by address, so that the same code
    reads the same in two objects."""
    listing = run(["nm", "-g", "--defined-only", "--format=posix", str(compiled)]).stdout.splitlines()
    weak = {fields[0] for fields in map(str.split, listing) if len(fields) > 1 and fields[1] == "W"}
    constants = local_constants(compiled)
    bodies: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in run(["objdump", "-d", "-r", "--no-show-raw-insn", str(compiled)]).stdout.splitlines():
        header = re.fullmatch(r"[0-9a-f]+ <(.+)>:", line)
        if header:
            current = bodies.setdefault(header.group(1), []) if header.group(1) in weak else None
        elif current is not None and line.strip():
            # objdump names a jump's target after the nearest symbol, and a local label
            # such as .LC3 is numbered per object: the address alone says where it goes
            # (calls and data show as relocation lines).
            line = re.sub(r" <[^>]*>$", "", re.sub(r"^\s*[0-9a-f]+:\s*", "", line))
            current.append(re.sub(r"\.L\w+", lambda label: constants.get(label.group(0), label.group(0)), line))
    return {name: "\n".join(lines) for name, lines in bodies.items()}


def differing_weak_functions(first: Path, second: Path) -> list[str]:
    """Weak functions both objects define with different code, demangled. The linker keeps
    one copy of each for both kernels, so such a function would run one revision's code
    on both sides of the comparison, unseen."""
    bodies = [weak_function_bodies(compiled) for compiled in (first, second)]
    names = sorted(name for name in bodies[0].keys() & bodies[1].keys() if bodies[0][name] != bodies[1][name])
    return run(["c++filt", *names]).stdout.splitlines() if names else []


def build_harness(a: str, b: str | None, build: Path) -> Path:
    build.mkdir(parents=True, exist_ok=True)
    trees = {"a": source_tree(a, build / "tree_a"), "b": source_tree(b, build / "tree_b")}
    for side, revision in (("a", a), ("b", b)):
        check_kernel_folder(trees[side], revision)
    for header in SHARED_HEADERS:
        if len({code_of(tree / header) for tree in (trees["a"], trees["b"], ROOT)}) > 1:
            raise SystemExit(
                f"{header} differs between the revisions or from the working tree: "
                "kernel_ab compares kernels behind the same interface"
            )
    # The core library and each distinct kernel compile side by side: a kernel takes
    # minutes at -O3, so three builds in turn would take most of the tool's time.
    digests = {side: kernel_digest(tree) for side, tree in trees.items()}
    distinct = {digest: trees[side] for side, digest in digests.items()}
    with ThreadPoolExecutor(len(distinct) + 1) as pool:
        building_core = pool.submit(core_libraries, build)
        compiling = {digest: pool.submit(compiled_kernel, tree, digest, build) for digest, tree in distinct.items()}
        compiled = {digest: future.result() for digest, future in compiling.items()}
        libraries = building_core.result()
    if len(compiled) == 2:
        differing = differing_weak_functions(*compiled.values())
        if differing:
            raise SystemExit(
                "the two kernels define these weak (inline or template) functions differently, and the "
                "linker would keep one copy for both: give them internal linkage (an unnamed namespace, "
                "as column_sweep.hpp does):\n  " + "\n  ".join(differing)
            )
    for stale in build.glob("kernel_*.plain.o"):
        if stale.stem.removeprefix("kernel_").removesuffix(".plain") not in compiled:
            stale.unlink()
    objects = [renamed_kernel(compiled[digests[side]], side, build) for side in ("a", "b")]
    executable = build / "kernel_ab"
    run(
        [
            "c++",
            *FLAGS,
            f"-I{ROOT / 'cpp' / 'include'}",
            f"-I{ROOT / 'cpp' / 'probes'}",
            f"-I{ROOT / '.venv' / 'include'}",
            str(HARNESS),
            *map(str, objects),
            *map(str, libraries),
            f"-L{ROOT / '.venv' / 'lib'}",
            f"-Wl,-rpath,{ROOT / '.venv' / 'lib'}",
            "-lmpi",
            "-fopenmp",
            "-lpthread",
            "-o",
            str(executable),
        ]
    )
    return executable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", default="HEAD", help="revision of kernel a (default HEAD)")
    parser.add_argument("--b", default=None, help="revision of kernel b (default: the working tree)")
    parser.add_argument(
        "--case",
        action="append",
        help="harness options of one case (repeatable); default: from memory and in cache, both dtypes",
    )
    parser.add_argument("--repeats", type=int, default=3, help="harness runs per case; the median is reported")
    parser.add_argument("--realtime", action="store_true", help="run the harness under SCHED_FIFO (chrt -f 50)")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "kernel-ab")
    args = parser.parse_args(argv)
    executable = build_harness(args.a, args.b, args.build_dir)
    prefix = ["chrt", "-f", "50"] if args.realtime else []
    cases = args.case or DEFAULT_CASES
    runs = {}
    for case in cases:
        command = [*prefix, str(executable), *shlex.split(case)]
        runs[case] = [run_json(command, f"harness on {case!r}") for _ in range(args.repeats)]
    best = best_probe([result for results in runs.values() for result in results])
    print(f"kernel a: {args.a}; kernel b: {args.b or 'working tree'}; median of {args.repeats} harness runs")
    print(
        f"best issue-rate probe {best:.2f} instructions/ns: the core alone >= {ALONE * best:.2f}, "
        f"shared <= {SHARED * best:.2f}"
    )
    print("| case | a Mpoints/s | b Mpoints/s | b / a (each run) | bit-identical | b / a, core alone | b / a, shared |")
    print("|---|---:|---:|---|---|---:|---:|")
    failed = False
    for case, results in runs.items():
        identical = all(r["bit_identical"] for r in results)
        failed = failed or not identical
        ratios = ", ".join(f"{r['b_over_a']:.3f}" for r in results)
        print(
            f"| `{case}` | {statistics.median(r['a_mpoints_per_s'] for r in results):.0f} "
            f"| {statistics.median(r['b_mpoints_per_s'] for r in results):.0f} "
            f"| **{statistics.median(r['b_over_a'] for r in results):.3f}** ({ratios}) | {identical} | "
            + " | ".join(f"{ratio:.3f} ({count})" for ratio, count in by_core_state(results, best).values())
            + " |"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
