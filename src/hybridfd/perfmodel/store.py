"""JSON files of keyed entries (calibrations, tuning decisions), validated on load.

A file is ``{"format": <name>, "entries": {<key>: <entry>}}``. Loading never trusts a
file: unreadable JSON, a wrong format, or an entry that fails its JSON schema is
reported as a :class:`StoreProblem` so the caller rebuilds it. Saving writes a temporary
file beside the target and renames it, so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from pathlib import Path

import jsonschema


class StoreProblem(Exception):
    """The file or one of its entries cannot be trusted (the message says why)."""


def host_name() -> str:
    return socket.gethostname()


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hybridfd"


def read_entries(path: Path, file_format: str) -> dict:
    """The entries of ``path`` ({} if it does not exist); StoreProblem if it is corrupt."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise StoreProblem(f"{path} cannot be read: {error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise StoreProblem(f"{path} is not valid JSON ({error})") from None
    if not isinstance(data, dict) or data.get("format") != file_format or not isinstance(data.get("entries"), dict):
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise StoreProblem(f"{path} is not a {file_format} file (format {found!r})")
    return data["entries"]


def check_entry(entry: object, schema: dict, source: str) -> None:
    """Raise StoreProblem naming every field of ``entry`` that breaks ``schema``."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(entry), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '(entry)'}: {e.message}" for e in errors)
        raise StoreProblem(f"{source} is invalid: {details}")


def write_entries(path: Path, file_format: str, entries: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            json.dump({"format": file_format, "entries": entries}, stream, indent=1, sort_keys=True)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
