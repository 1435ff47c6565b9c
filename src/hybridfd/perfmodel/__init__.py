"""Performance model: the WaitTime formula of the Blue Gene/P paper (Fig. 5.2), the
total-time prediction built on it, and the machine calibration that feeds both.

``python -m hybridfd.perfmodel.calibrate`` measures latency, bandwidth, compute and
packing costs on this machine; :func:`predict` turns them into seconds per apply.
"""

from hybridfd.perfmodel.formula import batch_runs, batch_sizes, batch_table, schedule_wait_time, wait_time
from hybridfd.perfmodel.predict import (
    Costs,
    Problem,
    Settings,
    halo_bytes_per_grid,
    predict,
    predict_all,
    problem_of,
    slowest_problem,
)

__all__ = [
    "Costs",
    "Problem",
    "Settings",
    "batch_runs",
    "batch_sizes",
    "batch_table",
    "halo_bytes_per_grid",
    "predict",
    "predict_all",
    "problem_of",
    "schedule_wait_time",
    "slowest_problem",
    "wait_time",
]
