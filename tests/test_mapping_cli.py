"""``python -m hybridfd.mapping`` (``hybridfd map``): table, plot, help and usage errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hybridfd.mapping.cli import main


def test_prints_every_strategy_and_writes_a_plot(tmp_path, capsys):
    plot = tmp_path / "map.png"
    assert main(["--grid", "4x4x2", "--topology", "bluegene-p", "--plot", str(plot), "--ranks"]) == 0
    out = capsys.readouterr().out
    for name in ("packed", "hilbert", "cp2k-heuristic", "greedy", "recursive-bisection", "metis"):
        assert name in out
    assert "bluegene-p: 2x2x2 mesh" in out and "where each grid position runs" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cannon_grid_and_one_strategy(capsys):
    assert main(["--grid", "16x16", "--topology", "cray-xe6", "--strategy", "cp2k-heuristic"]) == 0
    out = capsys.readouterr().out
    assert "cannon pattern on a 16x16 process grid" in out and "cray-xe6" in out


def test_help_exits_zero():
    result = subprocess.run([sys.executable, "-m", "hybridfd.mapping", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "--topology" in result.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--grid", "4x4x"], "is not sizes like 16x16x8"),
        (["--grid", "4x4x4x4"], "must be 2 or 3 positive sizes"),
        (["--grid", "4x4x4", "--strategy", "spiral"], "invalid choice: 'spiral'"),
        (["--grid", "4x4x4", "--topology", "bgq"], "unknown topology 'bgq'"),
        (["--grid", "8x8x8", "--topology", "host"], "512 processes do not match topology 'host'"),
        (["--grid", "4x4x4", "--pattern", "cannon", "--topology", "bluegene-p"], "needs a 2D grid"),
        (["--grid", "4x4x4", "--radius", "0"], "0 must be at least 1"),
        ([], "the following arguments are required: --grid"),
    ],
)
def test_malformed_options_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
