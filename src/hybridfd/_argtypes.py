"""argparse value types that name the bad value: those of ``hybridfd``'s subcommands and
of the library's own commands (``python -m hybridfd.tune``, the calibration, the
experiments, the mapping tool), which sit below the command line and so find them here."""

from __future__ import annotations

import argparse


def _integer_at_least(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} must be at least {least}")
    return value


def positive_int(text: str) -> int:
    return _integer_at_least(text, 1)


def nonnegative_int(text: str) -> int:
    return _integer_at_least(text, 0)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be greater than 0")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} must be between 0 and 1")
    return value


def byte_size(text: str) -> int:
    """``4096``, ``4k``/``4KiB``, ``4M``/``4MiB``, ``1G`` (powers of 1024) -> bytes."""
    units = {"": 1, "b": 1, "k": 1024, "kib": 1024, "m": 1024**2, "mib": 1024**2, "g": 1024**3, "gib": 1024**3}
    stripped = text.strip().lower()
    number = stripped.rstrip("kmgib")
    unit = stripped[len(number) :]
    try:
        value = int(number) * units[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a size in bytes (e.g. 4096, 64k, 4M)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1 byte")
    return value


def periodic_axes(text: str) -> tuple[bool, bool, bool]:
    """``xyz`` (all periodic, the default), any subset like ``xy``, or ``none``."""
    lowered = text.strip().lower()
    if lowered == "none":
        return (False, False, False)
    if not lowered or set(lowered) - set("xyz") or len(set(lowered)) != len(lowered):
        raise argparse.ArgumentTypeError(f"{text!r}: give the periodic axes as a subset of 'xyz' (e.g. xy) or 'none'")
    return tuple(axis in lowered for axis in "xyz")
