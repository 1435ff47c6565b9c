"""Running hybridfd-bench under SimGrid's ``smpirun`` on a generated platform.

The settings are those measured to be needed with SimGrid 3.32 (shared/TOOLCHAIN.md):
one shared allocation per rank with large blocks, log-P collectives (the default
selectors make start-up O(P^2)), no detached sends (a 3.32 search that dominates at 16k
ranks), no privatisation of globals (the core has none that differ between ranks), and,
with modelled compute, no benchmarking of the host's own time.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from hybridfd.mapping.topology import Topology
from hybridfd.simulate import platform as platforms

#: Where `make smpi` builds the SMPI driver, relative to the checkout.
DRIVER_IN_CHECKOUT = Path("build") / "smpi" / "cpp" / "tools" / "hybridfd-bench"

SETTINGS = (
    "-no-privatize",
    "--cfg=smpi/shared-malloc-blocksize:67108864",
    "--cfg=smpi/coll-selector:default",
    "--cfg=smpi/allreduce:rdb",
    "--cfg=smpi/reduce:binomial",
    "--cfg=smpi/barrier:ompi_recursivedoubling",
    "--cfg=smpi/bcast:binomial_tree",
    "--cfg=smpi/send-is-detached-thresh:0",
    "--log=root.thres:warning",
    "--cfg=network/crosstraffic:0",
)


def run(
    ranks: int,
    topology: Topology,
    machine: platforms.Machine,
    arguments: Sequence[str],
    directory: str | os.PathLike,
    driver: str | os.PathLike,
    timeout: float = 600,
    platform_xml: str | None = None,
) -> dict:
    """Simulates ``hybridfd-bench arguments`` on ``ranks`` ranks; returns its result record.
    ``platform_xml`` replaces the platform generated from ``topology`` (same hosts, other
    routes: benchmarks/simulated_routing.py). Raises RuntimeError with the output if the
    run fails."""
    platform_path, hostfile_path = platforms.write(topology, machine, ranks, directory, platform_xml)
    modelled = "--compute" in arguments and list(arguments)[list(arguments).index("--compute") + 1] == "modelled"
    command = [
        "smpirun",
        "-np",
        str(ranks),
        "-platform",
        str(platform_path),
        "-hostfile",
        str(hostfile_path),
        *SETTINGS,
        *machine.smpirun_options(),
        *(["--cfg=smpi/simulate-computation:no"] if modelled else []),
        str(Path(driver).resolve()),
        *arguments,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=directory)
    records = [line for line in result.stdout.splitlines() if line.startswith('{"format"')]
    if result.returncode != 0 or len(records) != 1:
        raise RuntimeError(f"$ {' '.join(command)}\nexit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return json.loads(records[0])
