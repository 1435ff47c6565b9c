"""RingWindow, the MiniMD slides' Hybrid-Advanced receive buffers: variable-size messages
that carry their own length, and flow control that never overwrites what a slow target
has not yet received."""

from __future__ import annotations

import time

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf

RANKS = (2, 3)


def payload(sender: int, index: int, largest: int) -> np.ndarray:
    """Message `index` from `sender`: a size the receiver can regenerate, often not a
    multiple of 8 (so data wraps around the ring's end at odd places), sometimes empty."""
    rng = np.random.default_rng([sender, index])
    size = int(rng.integers(0, largest + 1)) if index % 7 else 0
    return rng.integers(0, 256, size, dtype=np.uint8)


@pytest.mark.parametrize("poll_with_atomics", [False, True])
def test_slow_consumer_is_never_overwritten(comm, poll_with_atomics):
    """Rank 0 streams 300 messages into a ring that holds about four of them; rank 1
    receives slowly. Rank 0 must wait for room, and every message arrives intact. Both
    ways of polling: local memory (unified model) and MPI atomics (what the separate
    model needs)."""
    window = hf.RingWindow(comm, 1, 1024, poll_with_atomics)
    if poll_with_atomics or MPI.Get_library_version().startswith("MPICH"):  # MPICH: MPI_WIN_UNIFIED
        assert window.polls_local_memory == (not poll_with_atomics)
    count, largest = 300, 240
    if comm.rank == 0:
        for index in range(count):
            window.send([(1, 0, payload(0, index, largest))])
        assert window.waits_for_room > 0  # the flow control was needed, and held
    elif comm.rank == 1:
        into = np.empty(window.largest_message, dtype=np.uint8)
        for index in range(count):
            if index % 10 == 0:
                time.sleep(0.002)  # the slow consumer: the origin fills the ring meanwhile
            size = window.receive(0, into)
            np.testing.assert_array_equal(into[:size], payload(0, index, largest), err_msg=f"message {index}")
    comm.Barrier()
    del window


def test_variable_sizes_between_all_ranks(comm):
    """Every rank sends each other rank one message per round into the ring named after
    the sender, then receives its own; the rings hold two rounds of the largest messages,
    so no send waits and no cycle of waits can form."""
    largest = 500
    window = hf.RingWindow(comm, comm.size, 2 * (8 + (largest + 7) // 8 * 8))
    assert window.rings == comm.size and window.largest_message >= largest
    others = [rank for rank in range(comm.size) if rank != comm.rank]
    into = np.empty(largest, dtype=np.uint8)
    for round_ in range(50):
        window.send([(other, comm.rank, payload(comm.rank, round_ * comm.size + other, largest)) for other in others])
        for other in others:
            size = window.receive(other, into)
            expected = payload(other, round_ * comm.size + comm.rank, largest)
            np.testing.assert_array_equal(into[:size], expected)
    # Typed data travel as their bytes.
    values = np.arange(comm.rank, comm.rank + 17, dtype=np.float64)
    window.send([(other, comm.rank, values) for other in others])
    for other in others:
        size = window.receive(other, into)
        np.testing.assert_array_equal(into[:size].view(np.float64), np.arange(other, other + 17, dtype=np.float64))
    comm.Barrier()
    del window


def test_bad_messages_are_refused_before_any_transfer(comm):
    window = hf.RingWindow(comm, 2, 64)
    other = (comm.rank + 1) % comm.size
    with pytest.raises(ValueError, match=r"message of 64 bytes does not fit a ring of 64 bytes \(at most 56"):
        window.send([(other, 0, np.zeros(64, dtype=np.uint8))])
    with pytest.raises(ValueError, match=r"ring 2 out of range: this RingWindow has 2 rings"):
        window.send([(other, 2, np.zeros(8, dtype=np.uint8))])
    with pytest.raises(ValueError, match=rf"target rank {comm.rank} must be another rank"):
        window.send([(comm.rank, 0, np.zeros(8, dtype=np.uint8))])
    # A message larger than the room given stays in the ring and can be received after.
    window.send([(other, 1, np.full(40, comm.rank, dtype=np.uint8))])
    sender = (comm.rank - 1) % comm.size
    with pytest.raises(ValueError, match=r"message of 40 bytes in ring 1 does not fit the 8 bytes"):
        window.receive(1, np.empty(8, dtype=np.uint8))
    into = np.empty(56, dtype=np.uint8)
    assert window.receive(1, into) == 40 and (into[:40] == sender).all()
    with pytest.raises(ValueError, match="at least one ring"):
        hf.RingWindow(comm, 0, 64)
    comm.Barrier()
    del window


@pytest.mark.parametrize(("rings", "match"), [(0, "at least one ring, not 0"), (3, "number of rings must be the same")])
def test_rings_bad_or_differing_on_one_rank_raise_everywhere(comm, rings, match):
    with pytest.raises(ValueError, match=match):
        hf.RingWindow(comm, rings if comm.rank == comm.size - 1 else 2, 64)
