"""The shared launcher and the MPI test harness: timeouts kill hung runs, one rank's
failure fails the run, idle ranks are told to yield."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hybridfd import launch

sys.path.insert(0, str(Path(__file__).parent))
from test_mpi_suites import MPI_TESTS, run_suite  # noqa: E402

PY = sys.executable


def test_yield_settings_reach_the_ranks() -> None:
    probe = [PY, "-c", "import os; print('throttle=' + str(os.environ.get('MPIR_CVAR_CH4_PROGRESS_THROTTLE')))"]
    assert launch.run(2, probe, timeout=60).output.count("throttle=1") == 2
    assert launch.run(1, probe, timeout=60, yield_when_idle=False).output.count("throttle=None") == 1


def test_a_hung_run_is_killed_and_reported() -> None:
    result = launch.run(2, [PY, "-c", "print('started', flush=True); import time; time.sleep(300)"], timeout=5)
    assert result.timed_out
    assert result.seconds < 60
    assert result.output.count("started") == 2  # what the ranks printed is kept


def test_one_failing_rank_fails_the_run() -> None:
    program = "from mpi4py import MPI; import sys; sys.exit(3 if MPI.COMM_WORLD.rank == 1 else 0)"
    result = launch.run(3, [PY, "-c", program], timeout=60)
    assert not result.timed_out
    assert result.returncode != 0


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    shutil.copy(MPI_TESTS / "conftest.py", tmp_path / "conftest.py")
    return tmp_path


def test_harness_fails_when_one_rank_fails(suite_dir: Path) -> None:
    module = suite_dir / "test_one_rank_fails.py"
    module.write_text(
        "RANKS = (3,)\n"
        "def test_rank_two_disagrees(comm):\n"
        "    assert comm.rank != 2, 'rank two says no'\n"
        "    comm.Barrier()  # the other ranks wait here for rank 2, which aborts instead\n"
    )
    result = run_suite(module, 3, timeout=120)
    assert not result.timed_out, result.output
    assert result.returncode != 0
    assert "[rank 2] FAILED" in result.output and "rank two says no" in result.output, result.output


def test_failing_rank_report_survives_lost_forwarding(suite_dir: Path) -> None:
    """The report reaches the user even when mpiexec forwards none of the failing rank's
    output, as when an abort ends the job before mpiexec has drained that rank's pipes:
    here rank 1 runs with its stdout and stderr on /dev/null from the start."""
    module = suite_dir / "test_one_rank_fails.py"
    module.write_text("def test_rank_one_disagrees(comm):\n    assert comm.rank != 1, 'rank one says no'\n")
    pytest_argv = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", str(module)]
    unheard_rank_one = (
        "import os, sys\n"
        "if (os.environ.get('PMI_RANK') or os.environ.get('OMPI_COMM_WORLD_RANK')) == '1':\n"
        "    silence = os.open(os.devnull, os.O_WRONLY)\n"
        "    os.dup2(silence, 1)\n"
        "    os.dup2(silence, 2)\n"
        "os.execv(sys.argv[1], sys.argv[1:])\n"
    )
    result = launch.run(
        2, [PY, "-c", unheard_rank_one, *pytest_argv], timeout=120, extra_env={"HYBRIDFD_MPI_SUITE": "1"}
    )
    assert not result.timed_out, result.output
    assert result.returncode != 0
    assert "did not forward" in result.output, result.output
    assert "[rank 1] FAILED" in result.output and "rank one says no" in result.output, result.output


def test_harness_kills_a_deadlocked_suite(suite_dir: Path) -> None:
    module = suite_dir / "test_deadlock.py"
    module.write_text(
        "RANKS = (2,)\n"
        "import numpy as np\n"
        "def test_both_ranks_receive_first(comm):\n"
        "    buffer = np.empty(1)\n"
        "    comm.Recv(buffer, source=1 - comm.rank)\n"
    )
    result = run_suite(module, 2, timeout=10)
    assert result.timed_out


def test_command_line_usage_errors() -> None:
    result = subprocess.run([PY, "-m", "hybridfd.launch", "-n", "2"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "no program given" in result.stderr
    result = subprocess.run(
        [PY, "-m", "hybridfd.launch", "-n", "0", "--", "true"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and "-n 0" in result.stderr


def test_command_line_runs_and_prints_the_mpiexec_line() -> None:
    result = subprocess.run(
        [PY, "-m", "hybridfd.launch", "-n", "2", "--", PY, "-c", "print('hi')"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("launch: ") and "-n 2" in lines[0], result.stdout
    # Two ranks print concurrently; count the words, not the lines they land on.
    assert "".join(lines[1:]).count("hi") == 2, result.stdout


def test_worker_result_reads_the_reported_value_or_says_why_not() -> None:
    ok = launch.Result(["w"], 0, 'noise\nRESULT {"a": [1, 2]}\n', 0.1, False)
    assert launch.worker_result(ok) == {"a": [1, 2]}
    for result, why in (
        (launch.Result(["w"], 3, "rank 1 crashed", 0.1, False), "w: exit code 3\nrank 1 crashed"),
        (launch.Result(["w"], 0, "nothing", 0.1, True), "w: timed out"),
        (launch.Result(["w"], 0, "nothing", 0.1, False), "w: no result"),
    ):
        with pytest.raises(RuntimeError, match=why):
            launch.worker_result(result)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_ranks_do_not_outlive_their_launcher(how: signal.Signals, tmp_path: Path) -> None:
    """The run sits in a process group of its own, which a signal to the launcher's group
    does not reach: killing the launcher, even outright, must take its ranks along. Each
    rank leaves a file named after its pid (its printed lines may interleave)."""
    program = f"import os, time; open(os.path.join({str(tmp_path)!r}, str(os.getpid())), 'w').close(); time.sleep(300)"
    launcher = subprocess.Popen([PY, "-m", "hybridfd.launch", "-n", "2", "--", PY, "-c", program])
    deadline = time.monotonic() + 120
    while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline and launcher.poll() is None:
        time.sleep(0.1)
    pids = [int(path.name) for path in tmp_path.iterdir()]
    assert len(pids) == 2, f"the ranks did not start (launcher exit code {launcher.poll()})"
    launcher.send_signal(how)
    launcher.wait(timeout=30)
    deadline = time.monotonic() + 30
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in pids if _state(pid) not in ("gone", "Z")]
    assert not alive, f"ranks {alive} outlived their launcher ({how.name})"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return "gone"
