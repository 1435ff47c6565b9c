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
from collections import OrderedDict
from pathlib import Path


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


# Entries that passed their schema in this process, by (schema, the entry's canonical
# JSON text), most recent last. The check is a function of those two alone, and
# jsonschema takes 0.3-0.6 ms on a calibration entry (its 40 ping-pong numbers), which
# the tuner pays at every Operator(approach="auto"): a fifth of its budget on a small
# job. An entry changed in any way, even 1 for 1.0 or true for 1, has another text and
# is checked again. The value keeps the schema alive, so its id is never reused.
_PASSED: OrderedDict[tuple[int, str], dict] = OrderedDict()
_PASSED_SIZE = 64


def check_entry(entry: object, schema: dict, source: str) -> None:
    """Raise StoreProblem naming every field of ``entry`` that breaks ``schema``."""
    try:
        text = json.dumps(entry, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        text = None  # not plain JSON (e.g. NaN): checked every time, never remembered
    key = None if text is None else (id(schema), text)
    if key is not None and _PASSED.get(key) is schema:
        _PASSED.move_to_end(key)
        return
    import jsonschema  # 0.1 s to import: only where a document is checked

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(entry), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '(entry)'}: {e.message}" for e in errors)
        raise StoreProblem(f"{source} is invalid: {details}")
    if key is not None:
        _PASSED[key] = schema
        if len(_PASSED) > _PASSED_SIZE:
            _PASSED.popitem(last=False)


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
