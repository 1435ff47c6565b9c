"""How results look in a terminal: rich tables, and progress bars that appear only for
work that takes more than a few seconds.

Under mpiexec a rank's stdout is a pipe, so rich would not draw live bars; the CLI sets
``HYBRIDFD_TERMINAL=1`` for the ranks it launches when its own stdout is a terminal.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

#: Work shorter than this shows no progress bar at all.
PROGRESS_AFTER_SECONDS = 2.0


def console(stderr: bool = False) -> Console:
    forced = os.environ.get("HYBRIDFD_TERMINAL") == "1"
    stream = sys.stderr if stderr else sys.stdout
    # Logs and files get wide tables; a terminal keeps its own width.
    width = None if forced or stream.isatty() else 160
    return Console(stderr=stderr, force_terminal=True if forced else None, width=width)


def format_value(value: Any, spec: str | None) -> str:  # noqa: ANN401 - table cells hold any JSON value
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) and spec:
        return format(value, spec)
    if isinstance(value, list):
        return "x".join(str(v) for v in value) if all(isinstance(v, int) for v in value) else str(value)
    return str(value)


def result_table(result: dict[str, Any]) -> Table:
    """The rows of a result as a rich table, columns as the result names them; a result of
    one row is shown turned on its side (one line per column), which fits any terminal."""
    table = Table(title=result["title"], title_justify="left")
    columns, rows = result["columns"], result["rows"]
    if len(rows) == 1 and len(columns) > 4:
        table.add_column("what")
        table.add_column("value", justify="right")
        for column in columns:
            table.add_row(column["title"], format_value(rows[0].get(column["key"]), column.get("format")))
        return table
    for column in columns:
        values = [row.get(column["key"]) for row in rows if row.get(column["key"]) is not None]
        numeric = bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        table.add_column(column["title"], justify="right" if numeric else "left")
    for row in rows:
        table.add_row(*(format_value(row.get(c["key"]), c.get("format")) for c in columns))
    return table


def show(result: dict[str, Any], out: Console | None = None) -> None:
    out = out or console()
    out.print(result_table(result))
    for note in result.get("notes", []):
        out.print(f"[dim]note:[/dim] {note}", highlight=False)


class DelayedProgress:
    """A rich progress bar over ``total`` steps that shows itself only once the work has
    taken :data:`PROGRESS_AFTER_SECONDS`, and only when ``enabled`` (rank 0)."""

    def __init__(self, description: str, total: int, enabled: bool = True) -> None:
        self._enabled = enabled and total > 0
        self._start = time.perf_counter()
        self._done = 0
        self._total = total
        self._description = description
        self._progress: Progress | None = None
        self._task = None

    def advance(self, description: str | None = None) -> None:
        self._done += 1
        if description is not None:
            self._description = description
        if not self._enabled:
            return
        if self._progress is None and time.perf_counter() - self._start >= PROGRESS_AFTER_SECONDS:
            out = console(stderr=True)
            if not out.is_terminal:
                self._enabled = False
                return
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=out,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self._description, total=self._total)
        if self._progress is not None:
            self._progress.update(self._task, completed=self._done, description=self._description)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> DelayedProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
