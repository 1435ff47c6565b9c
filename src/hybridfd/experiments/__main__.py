"""Worker entry of the experiments, run under mpiexec by :func:`hybridfd.experiments.sub_run`:

    python -m hybridfd.experiments NAME PARAMS.json OUT.json

Every rank runs ``worker(MPI.COMM_WORLD, params)``; rank 0 writes what it returns to OUT.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mpi4py import MPI

from hybridfd.experiments import registry
from hybridfd.results import plain


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(f"usage: python -m hybridfd.experiments NAME PARAMS.json OUT.json (got {argv})", file=sys.stderr)
        return 2
    name, params_path, out_path = argv
    module = registry()[name]
    numbers = module.worker(MPI.COMM_WORLD, json.loads(Path(params_path).read_text()))
    if MPI.COMM_WORLD.rank == 0:
        Path(out_path).write_text(json.dumps(plain(numbers)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
