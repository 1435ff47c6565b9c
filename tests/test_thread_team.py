"""The threads of an Operator: count from the argument, else OMP_NUM_THREADS, else 1;
placement reported as OpenMP sets it; a live team does not stop the interpreter from
exiting cleanly. (Exceptions in threads: cpp/tests/thread_team_test.cpp via
test_cpp_core.py. Results of every model: tests/mpi/test_models.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = """
import json, numpy as np, hybridfd as hf
from mpi4py import MPI
dec = hf.Decomposition(hf.Domain((16, 12, 10), periodic=(True, True, True)), MPI.COMM_WORLD)
configs = {}
for approach in ("flat-original", "hybrid-multiple", "hybrid-master-only"):
    op = hf.Operator(dec, hf.Stencil.laplace(2), approach)
    a = np.random.default_rng(0).standard_normal((4, 16, 12, 10))
    assert np.array_equal(op.apply(a), hf.reference.apply(op.stencil, a, periodic=(True, True, True)))
    configs[approach] = op.config
print(json.dumps(configs))
"""


def run_script(**environment: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    env.update(environment, OMP_WAIT_POLICY="passive")
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_threads_default_to_one_without_omp_num_threads():
    configs = run_script()
    assert {approach: config["threads"] for approach, config in configs.items()} == {
        "flat-original": 1,
        "hybrid-multiple": 1,
        "hybrid-master-only": 1,
    }


def test_threads_from_omp_num_threads_for_threaded_models_only():
    configs = run_script(OMP_NUM_THREADS="3")
    assert configs["hybrid-multiple"]["threads"] == 3
    assert configs["hybrid-master-only"]["threads"] == 3
    assert configs["flat-original"]["threads"] == 1  # flat is one thread, whatever OpenMP says


def test_placement_follows_openmp_variables():
    configs = run_script(OMP_NUM_THREADS="2", OMP_PROC_BIND="close", OMP_PLACES="cores")
    placement = configs["hybrid-multiple"]["placement"]
    assert placement.startswith("OMP_PROC_BIND=close, OMP_PLACES=cores ("), placement
    assert "threads on CPUs" in placement
    assert configs["flat-original"]["placement"] == "one thread"


def test_interpreter_exits_cleanly_with_a_live_team():
    # run_script's operators, with their threads, are alive when the interpreter exits: it
    # must exit 0 without hanging (the timeout would fail the test).
    run_script(OMP_NUM_THREADS="4")
