"""The one launcher that tests, benchmarks, the demo and the CLI share.

``python -m hybridfd.launch -n 4 [--no-yield] [--timeout S] -- prog args...`` runs
``prog`` under the mpiexec of the MPI hybridfd was built with. By default it makes idle
ranks yield their core (MPICH's progress throttle): with more ranks than cores, ranks
that busy-poll starve the rank that has work (see docs/oversubscription.md).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: Settings that make a rank waiting for messages (MPICH's progress throttle) and an idle
#: OpenMP thread of a hybrid model (OMP_WAIT_POLICY) give up its core. Measured effect on
#: this 2-core machine: docs/oversubscription.md.
YIELD_ENVIRONMENT = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "16",
    "MPIR_CVAR_POLLS_BEFORE_YIELD": "100",
    "OMP_WAIT_POLICY": "passive",
}


def mpiexec_path() -> str:
    """The mpiexec beside this Python (the mpich wheel), else $MPI_HOME/bin, else PATH."""
    candidates = [Path(sys.prefix) / "bin" / "mpiexec"]
    if os.environ.get("MPI_HOME"):
        candidates.insert(0, Path(os.environ["MPI_HOME"]) / "bin" / "mpiexec")
    for candidate in candidates:
        if candidate.exists():
            return str(candidate)
    found = shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError("no mpiexec found beside this Python, in $MPI_HOME/bin or on PATH")
    return found


@functools.cache
def _is_open_mpi(mpiexec: str) -> bool:
    try:
        version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in version or "OpenRTE" in version


def command(ranks: int, argv: list[str], mpiexec: str | None = None) -> list[str]:
    """The mpiexec command line that runs ``argv`` on ``ranks`` ranks (another MPI's
    ``mpiexec`` may be given, e.g. a peer code's in its own environment)."""
    if ranks < 1:
        raise ValueError(f"number of ranks must be at least 1, got {ranks}")
    mpiexec = mpiexec or mpiexec_path()
    extra = ["--oversubscribe"] if _is_open_mpi(mpiexec) else []
    return [mpiexec, *extra, "-n", str(ranks), *argv]


def environment(yield_when_idle: bool = True) -> dict[str, str]:
    env = dict(os.environ)
    if yield_when_idle:
        for key, value in YIELD_ENVIRONMENT.items():
            env.setdefault(key, value)
    else:
        for key in YIELD_ENVIRONMENT:
            env.pop(key, None)
    if os.geteuid() == 0:  # Open MPI refuses root unless told; MPICH ignores these
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


@dataclass
class Result:
    command: list[str]
    returncode: int
    output: str
    seconds: float
    timed_out: bool


RESULT_PREFIX = "RESULT "


def report_result(value: object) -> None:
    """For a worker launched by :func:`run`: print ``value`` as the one JSON line that
    :func:`worker_result` reads back (benchmarks run their MPI part this way)."""
    import json

    print(RESULT_PREFIX + json.dumps(value), flush=True)


def worker_result(result: Result) -> object:
    """The value a worker printed with :func:`report_result`; RuntimeError with the
    command and everything the ranks printed if it failed, timed out or printed none."""
    import json

    lines = [line for line in result.output.splitlines() if line.startswith(RESULT_PREFIX)]
    if result.returncode != 0 or result.timed_out or not lines:
        why = (
            "timed out" if result.timed_out else f"exit code {result.returncode}" if result.returncode else "no result"
        )
        raise RuntimeError(f"{' '.join(result.command)}: {why}\n{result.output}")
    return json.loads(lines[0][len(RESULT_PREFIX) :])


def run(
    ranks: int,
    argv: list[str],
    timeout: float | None = None,
    yield_when_idle: bool = True,
    extra_env: dict[str, str] | None = None,
    capture: bool = True,
    mpiexec: str | None = None,
) -> Result:
    """Run ``argv`` on ``ranks`` ranks; with ``capture``, stdout and stderr go to ``output``.

    A run that outlives ``timeout`` seconds is killed with its whole process group (so no
    rank outlives it) and reported with ``timed_out=True`` and whatever the ranks printed.
    The run runs in a process group of its own (so that it can be killed whole), which
    a signal to the caller's group does not reach: so the run is killed whole too when
    the caller leaves this function any other way (an exception, Ctrl-C, SIGTERM in
    ``main``), and mpiexec gets SIGTERM from the kernel if the caller dies outright
    (Linux): no mpiexec is left spinning after its launcher is gone.
    """
    cmd = command(ranks, argv, mpiexec)
    env = environment(yield_when_idle)
    env.update(extra_env or {})
    pipe = subprocess.PIPE if capture else None
    with tempfile.TemporaryDirectory(prefix="hybridfd-last-words-") as last_words:
        env[LAST_WORDS_ENVIRONMENT] = last_words
        start = time.perf_counter()
        process = subprocess.Popen(
            _terminated_with_parent(cmd),
            stdout=pipe,
            stderr=subprocess.STDOUT if capture else None,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(process)
            output, _ = process.communicate()
            timed_out = True
        except BaseException:
            _kill_group(process)
            process.wait()
            raise
        seconds = time.perf_counter() - start
        output = _with_last_words(output or "", Path(last_words), echo=not capture)
    return Result(cmd, process.returncode, output, seconds, timed_out)


#: The directory in which :func:`abort` leaves a rank's last words for :func:`run`.
LAST_WORDS_ENVIRONMENT = "HYBRIDFD_LAST_WORDS"


def abort(comm: object, message: str, errorcode: int = 1) -> None:
    """Print ``message`` as this rank's last words and abort every rank of ``comm``.

    mpiexec forwards a rank's output through pipes it stops draining once an abort kills
    the job, so what a rank printed just before MPI_Abort can be lost. Under :func:`run`
    the message is also written to a file first, which outlives the abort and which
    :func:`run` adds to the output when the forwarded copy did not arrive.
    """
    rank = comm.Get_rank()
    directory = os.environ.get(LAST_WORDS_ENVIRONMENT)
    if directory and os.path.isdir(directory):
        with open(os.path.join(directory, f"rank-{rank}.txt"), "w") as file:
            file.write(message)
    sys.stderr.write(message)
    sys.stderr.flush()
    comm.Abort(errorcode)


def _with_last_words(output: str, directory: Path, echo: bool) -> str:
    """``output`` followed by every rank's last words (:func:`abort`) it does not hold; not
    capturing (``echo``), they are written to stderr."""
    for path in sorted(directory.glob("rank-*.txt")):
        words = path.read_text()
        if echo:  # the forwarded copy went to the terminal, unseen here: repeat it
            sys.stderr.write(f"\nlaunch: last words of {path.stem}, again:\n{words}")
        elif words and words not in output:
            output += f"\nlaunch: last words of {path.stem}, which mpiexec did not forward:\n{words}"
    return output


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # the group is gone already
        pass


# Run before mpiexec, in its own process, then replaced by it (exec keeps the setting):
# SIGTERM when the launcher dies (prctl PR_SET_PDEATHSIG = 1). Not a preexec_fn, which
# runs Python between fork and exec and can deadlock a parent that has other threads.
_PARENT_DEATH_SIGTERM = (
    "import ctypes, os, signal, sys; "
    "ctypes.CDLL(None).prctl(1, int(signal.SIGTERM), 0, 0, 0); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


def _terminated_with_parent(cmd: list[str]) -> list[str]:
    """``cmd`` so that it gets SIGTERM if the launcher dies outright (Linux; elsewhere
    ``cmd`` as it is). mpiexec passes the signal on to its ranks."""
    if not sys.platform.startswith("linux"):
        return cmd
    return [sys.executable, "-c", _PARENT_DEATH_SIGTERM, *cmd]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hybridfd.launch", description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--ranks", type=int, required=True, help="number of MPI ranks")
    parser.add_argument("--no-yield", action="store_true", help="let idle ranks busy-poll (MPI's default)")
    parser.add_argument("--timeout", type=float, default=None, help="kill the run after this many seconds")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- program and its arguments")
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program given; usage: python -m hybridfd.launch -n 4 -- python script.py")
    if args.ranks < 1:
        parser.error(f"-n {args.ranks}: the number of ranks must be at least 1")
    print("launch:", " ".join(command(args.ranks, program)), flush=True)
    # SIGTERM and SIGHUP end the launcher through run()'s clean-up, which kills the run.
    for terminating in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(terminating, lambda number, frame: sys.exit(128 + number))
    result = run(args.ranks, program, timeout=args.timeout, yield_when_idle=not args.no_yield, capture=False)
    if result.timed_out:
        print(f"launch: killed after {args.timeout} s", file=sys.stderr)
        return 124
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
