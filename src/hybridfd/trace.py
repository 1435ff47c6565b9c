"""Traces of an Operator's applies: the communication and computation profile of the GPAW
journal (Sect. 7.1, Fig. 7.1), as Chrome trace JSON (opens in https://ui.perfetto.dev)
and as a timeline PNG, one line per rank and thread.

The events are recorded by the C++ core (``cpp/include/hybridfd/tracer.hpp``) into
buffers allocated when tracing starts; this module only gathers and draws them::

    op = hf.Operator(decomposition, stencil, approach="flat-optimized", trace=True)
    op.apply(a, out=b)
    trace = op.trace()  # collective; the whole trace on rank 0, None elsewhere
    if trace is not None:
        trace.save_chrome("apply.trace.json")
        trace.save_timeline("apply.png")

Each event is one of :data:`KINDS` with the batch number it belongs to (its place in the
apply's sequence of batches; -1 for ``apply``). Times are seconds on rank 0's clock: each
rank's offset to it is measured when tracing starts, within
:attr:`Trace.clock_uncertainty` (half the best ping-pong round trip).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hybridfd import _core
from hybridfd._collective import checked_root

#: Every event kind, in the core's order (an event's ``kind`` indexes it).
KINDS: tuple[str, ...] = tuple(_core.trace_kind_names())
#: Kinds that move halos, and kinds that compute (the two colour families of the plot).
COMMUNICATION = ("pack", "post", "wait", "progress")
COMPUTATION = ("unpack", "compute")
#: Warm colours communicate, cool ones compute.
COLOURS = {
    "pack": "#f4a261",
    "post": "#e76f51",
    "wait": "#c1121f",
    "progress": "#ffb703",
    "unpack": "#90e0ef",
    "compute": "#0077b6",
}
#: Events per thread an Operator's trace buffers hold by default (24 bytes each).
DEFAULT_EVENTS_PER_THREAD = 1 << 16


@dataclass
class Lane:
    """The events of one thread of one rank, in the order they ended."""

    rank: int
    thread: int
    start: np.ndarray  # seconds on rank 0's clock
    end: np.ndarray
    kind: np.ndarray  # index into KINDS
    batch: np.ndarray
    messages: np.ndarray  # per post: the messages to other ranks it started (else 0)
    dropped: int = 0  # events the full buffer could not hold

    def of(self, kind: str) -> np.ndarray:
        """A mask of this lane's events of ``kind``."""
        return self.kind == KINDS.index(kind)


@dataclass
class Trace:
    """The events of every thread of every rank of one traced Operator."""

    lanes: list[Lane]
    clock_uncertainty: list[float]  # per rank, seconds: bound on the clock offset's error
    config: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def gather(cls, op: Any, root: int = 0) -> Trace | None:  # noqa: ANN401 - a hybridfd.Operator
        """Collective: every rank's events of ``op`` on rank ``root``; None on the others.

        ``root``, and the ranks an error names, are ranks of the communicator given to the
        decomposition; a lane's ``rank`` is its rank in the decomposition's :attr:`comm`.
        """
        decomposition = op.decomposition
        root, problem = checked_root(decomposition.size, root)
        decomposition._agree(problem, root, "root")
        mine = op._core.trace() if op._core is not None else None
        everything = decomposition.comm.gather(mine, root=decomposition._cartesian_rank_of[root])
        if everything is None:
            return None
        lanes, uncertainty = [], []
        for rank, local in enumerate(everything):
            if local is None:
                continue
            uncertainty.append(local["clock_uncertainty_seconds"])
            for thread, (arrays, dropped) in enumerate(zip(local["threads"], local["dropped"], strict=True)):
                lanes.append(Lane(rank, thread, dropped=dropped, **arrays))
        return cls(lanes, uncertainty, op.config)

    @property
    def origin(self) -> float:
        """The earliest event's start: 0 of the exported timelines."""
        starts = [lane.start.min() for lane in self.lanes if lane.start.size]
        return float(min(starts)) if starts else 0.0

    @property
    def dropped(self) -> int:
        return sum(lane.dropped for lane in self.lanes)

    def applies(self, rank: int) -> np.ndarray:
        """(start, end) of rank ``rank``'s applies, shape (n, 2)."""
        lane = next(lane for lane in self.lanes if lane.rank == rank and lane.thread == 0)
        mask = lane.of("apply")
        return np.stack([lane.start[mask], lane.end[mask]], axis=1)

    def messages(self, rank: int) -> int:
        """The messages rank ``rank`` sent to other ranks in the traced applies (one per
        neighbour and direction of the halo per post: six per batch for a star stencil,
        up to 26 with edges and corners)."""
        return int(sum(lane.messages.sum() for lane in self.lanes if lane.rank == rank))

    def fractions(self) -> list[dict[str, Any]]:
        """Per rank and thread: the fraction of its rank's apply time in each kind of
        event, and ``other`` (the rest: idle, waiting for the team, Python-free glue)."""
        rows = []
        for lane in self.lanes:
            spans = self.applies(lane.rank)
            total = float((spans[:, 1] - spans[:, 0]).sum())
            row: dict[str, Any] = {"rank": lane.rank, "thread": lane.thread, "traced_ms": 1e3 * total}
            busy = 0.0
            for kind in (*COMMUNICATION, *COMPUTATION):
                mask = lane.of(kind)
                share = float((lane.end[mask] - lane.start[mask]).sum()) / total if total > 0 else 0.0
                row[kind] = share
                busy += share
            row["communication"] = sum(row[k] for k in COMMUNICATION)
            row["computation"] = sum(row[k] for k in COMPUTATION)
            row["other"] = max(0.0, 1.0 - busy)
            row["events"] = int(lane.kind.size)
            row["dropped"] = lane.dropped
            rows.append(row)
        return rows

    def chrome(self) -> dict[str, Any]:
        """The trace in Chrome's Trace Event Format: one complete ("X") event per event,
        pid = rank, tid = thread, times in microseconds from :attr:`origin`."""
        origin = self.origin
        events: list[dict[str, Any]] = []
        for rank in sorted({lane.rank for lane in self.lanes}):
            events.append({"name": "process_name", "ph": "M", "pid": rank, "args": {"name": f"rank {rank}"}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": rank, "args": {"sort_index": rank}})
        for lane in self.lanes:
            events.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "pid": lane.rank,
                    "tid": lane.thread,
                    "args": {"name": f"thread {lane.thread}"},
                }
            )
            for start, end, kind, batch in zip(lane.start, lane.end, lane.kind, lane.batch, strict=True):
                name = KINDS[kind]
                event = {
                    "name": name,
                    "cat": "communication" if name in COMMUNICATION else "computation" if name in COMPUTATION else name,
                    "ph": "X",
                    "ts": round(1e6 * (float(start) - origin), 3),
                    "dur": round(1e6 * (float(end) - float(start)), 3),
                    "pid": lane.rank,
                    "tid": lane.thread,
                }
                if batch >= 0:
                    event["args"] = {"batch": int(batch)}
                events.append(event)
        return {
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {
                "producer": "hybridfd",
                "config": json.dumps(self.config, default=str),
                "clock_uncertainty_us": json.dumps([round(1e6 * u, 3) for u in self.clock_uncertainty]),
                "dropped_events": str(self.dropped),
            },
        }

    def save_chrome(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.chrome()) + "\n")
        return path

    def timeline(self) -> list[dict[str, Any]]:
        """The lanes as plain lists (milliseconds from :attr:`origin`), for JSON results;
        :func:`plot_timeline` draws them."""
        origin = self.origin
        return [
            {
                "rank": lane.rank,
                "thread": lane.thread,
                "start_ms": np.round(1e3 * (lane.start - origin), 6).tolist(),
                "end_ms": np.round(1e3 * (lane.end - origin), 6).tolist(),
                "kind": [KINDS[k] for k in lane.kind],
                "batch": lane.batch.tolist(),
            }
            for lane in self.lanes
        ]

    def save_timeline(self, path: str | Path, title: str = "") -> Path:
        from hybridfd.experiments._plot import plt, save

        fig, ax = plt.subplots(figsize=(9, 0.5 + 0.4 * len(self.lanes)))
        plot_timeline(ax, self.timeline(), title or self.config.get("approach", ""))
        save(fig, Path(path))
        return Path(path)


def plot_timeline(ax: Any, lanes: list[dict[str, Any]], title: str = "", legend: bool = True) -> None:  # noqa: ANN401 - matplotlib axes
    """Draw ``lanes`` (as :meth:`Trace.timeline` gives them) on ``ax``: one line per rank
    and thread, top to bottom, its applies as a grey band and its events coloured by kind.
    A lane's ``label``, if it has one, names its line."""
    from matplotlib.patches import Patch

    labels = []
    for row, lane in enumerate(lanes):
        y = len(lanes) - 1 - row
        labels.append((y, lane.get("label", f"rank {lane['rank']} thread {lane['thread']}")))
        start, end = np.asarray(lane["start_ms"]), np.asarray(lane["end_ms"])
        kinds = np.asarray(lane["kind"])
        applies = kinds == "apply"
        ax.broken_barh(
            list(zip(start[applies], end[applies] - start[applies], strict=True)), (y - 0.45, 0.9), color="#e9ecef"
        )
        for kind, colour in COLOURS.items():
            mask = kinds == kind
            if mask.any():
                ax.broken_barh(
                    list(zip(start[mask], end[mask] - start[mask], strict=True)), (y - 0.35, 0.7), color=colour
                )
    ax.set_yticks([y for y, _ in labels], [text for _, text in labels], fontsize=7)
    ax.set_xlabel("ms")
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    if title:
        ax.set_title(title, fontsize=9)
    if legend:
        handles = [Patch(color=colour, label=kind) for kind, colour in COLOURS.items()]
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
