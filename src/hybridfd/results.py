"""Results of the CLI and the experiments: one JSON format, validated against a schema.

A result records what was run (the command line, every parameter, the Operator's
``config``), where and with what (host, cores, MPI library as mpi4py and as the C++ core
see it, thread level, build flags, versions, git revision), and the numbers as ``rows``
with ``columns`` saying how to show them. ``schemas/result.schema.json`` is the contract;
every result is validated before it is written and when it is read back.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "hybridfd-result/1"
SCHEMA_PATH = Path(__file__).parent / "schemas" / "result.schema.json"

_THREAD_LEVELS = ("MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE")


class ResultError(ValueError):
    """A result that does not match the schema (or is not JSON at all)."""


@functools.cache
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def git_revision() -> str | None:
    """The commit of the checkout this package was installed from, ``-dirty`` if it has
    uncommitted changes to tracked files; None outside a git checkout.

    The package directory is asked, not the working directory: with ``make setup`` the
    venv lives inside the checkout it was built from.
    """
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def cores() -> int:
    """Cores this process may run on (the affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def environment() -> dict[str, Any]:
    """Where and with what this process runs (collective-free; any rank may call it)."""
    from mpi4py import MPI

    from hybridfd import _core
    from hybridfd._version import __version__

    major, minor = MPI.Get_version()
    return {
        "host": socket.gethostname(),
        "ranks": MPI.COMM_WORLD.size,
        "cores": cores(),
        "mpi_library": MPI.Get_library_version().strip(),
        "mpi_library_core": _core.mpi_library_version().strip(),
        "mpi_standard": f"{major}.{minor}",
        "thread_level": _THREAD_LEVELS[MPI.Query_thread()],
        "build_flags": _core.build_flags(),
        "versions": {
            "hybridfd": __version__,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "mpi4py": _version("mpi4py"),
            "mpich": _version("mpich"),
        },
        "git_revision": git_revision(),
    }


def new_result(
    command: str,
    name: str,
    title: str,
    parameters: dict[str, Any],
    columns: list[dict[str, str]],
    rows: list[dict[str, Any]],
    notes: list[str] | None = None,
    config: dict[str, Any] | None = None,
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """A result in the schema's shape (validated when saved)."""
    result = {
        "format": FORMAT,
        "command": command,
        "name": name,
        "title": title,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "argv": list(sys.argv if argv is None else argv),
        "environment": environment(),
        "parameters": parameters,
        "columns": columns,
        "rows": rows,
        "plot": None,
        "notes": list(notes or []),
    }
    if config is not None:
        result["config"] = config
    return plain(result)


def plain(value: Any) -> Any:  # noqa: ANN401 - any JSON-able tree
    """``value`` with numpy scalars, arrays, tuples and paths turned into plain JSON types."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, Path):
        return str(value)
    return value


def validate(result: object, source: str = "result") -> None:
    """Raise :class:`ResultError` naming ``source`` and the first mismatch with the schema."""
    import jsonschema  # 0.1 s to import: only where a document is checked

    try:
        jsonschema.validate(result, schema())
    except jsonschema.ValidationError as error:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ResultError(f"{source} does not match {SCHEMA_PATH.name} at {where}: {error.message}") from None
    keys = {column["key"] for column in result["columns"]}
    for index, row in enumerate(result["rows"]):
        missing = sorted(keys - row.keys())
        if missing:
            raise ResultError(f"{source}: row {index} has no value for column(s) {', '.join(missing)}")


def save(result: dict[str, Any], path: Path) -> Path:
    """Validate ``result`` and write it to ``path`` as indented JSON."""
    result = plain(result)
    validate(result, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def load(path: Path) -> dict[str, Any]:
    """Read and validate a saved result; :class:`ResultError` names the file and the problem."""
    try:
        result = json.loads(Path(path).read_text())
    except OSError as error:
        raise ResultError(f"cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise ResultError(f"{path} is not JSON: {error}") from None
    validate(result, str(path))
    return result
