"""Running hybridfd-bench under SimGrid's ``smpirun`` on a generated platform.

The settings are those measured to be needed with SimGrid 3.32 (docs/simulation.md installs it):
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

#: Transports whose messages are known to pay ``Machine.message_overhead`` under SimGrid
#: 3.32: p2p's MPI_Isends (smpi/ois; tests/test_smpi.py measures it). The persistent
#: transport's MPI_Send_init/MPI_Start pay nothing (neither smpi/ois nor, without detached
#: sends, smpi/os); SMPI 3.32 lacks the neighbour collectives; the RMA and partitioned
#: transports are not checked.
CHARGED_TRANSPORTS = ("p2p",)


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
    routes, as tests/test_smpi.py compares them). Raises RuntimeError with the output if the
    run fails, ValueError for a transport that would not pay ``machine.message_overhead``."""
    arguments = list(arguments)
    transport = arguments[arguments.index("--transport") + 1] if "--transport" in arguments else "p2p"
    if machine.message_overhead and transport not in CHARGED_TRANSPORTS:
        raise ValueError(
            f"--transport {transport}: its messages are not known to pay {machine.name}'s per-message overhead "
            f"({machine.message_overhead:g} s at each end) under SimGrid 3.32, only those of "
            f"{', '.join(CHARGED_TRANSPORTS)} (platform.Machine.message_overhead)"
        )
    platform_path, hostfile_path = platforms.write(topology, machine, ranks, directory, platform_xml)
    modelled = "--compute" in arguments and arguments[arguments.index("--compute") + 1] == "modelled"
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
        *machine.driver_arguments(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=directory)
    records = [line for line in result.stdout.splitlines() if line.startswith('{"format"')]
    if result.returncode != 0 or len(records) != 1:
        raise RuntimeError(f"$ {' '.join(command)}\nexit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return json.loads(records[0])
