"""What hybridfd runs on: the MPI library and its version as mpi4py and as the C++ core
see them (they must be the same library), the MPI standard, the thread level provided,
the core's build flags, the cores this process may use, versions and the git revision.

    hybridfd info            # this process
    hybridfd info -n 2       # as the ranks of a 2-rank run see it
"""

from __future__ import annotations

import argparse

from hybridfd.cli._common import add_output_option, add_ranks_option, relaunch, save_and_show

HELP = "MPI library, thread level, build flags, cores, versions, git revision"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_ranks_option(parser)
    add_output_option(parser, "results/info.json")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def main(args: argparse.Namespace) -> int:
    launched = relaunch(args)
    if launched is not None:
        return launched
    from mpi4py import MPI

    import hybridfd as hf
    from hybridfd import results

    comm = MPI.COMM_WORLD
    env = results.environment()
    # Every rank's host and cores: ranks of a multi-node run may differ.
    hosts = comm.gather((env["host"], env["cores"]), root=0)
    if comm.rank != 0:
        return 0
    same_library = env["mpi_library"] == env["mpi_library_core"]
    rows = [
        {"key": "hybridfd", "value": env["versions"]["hybridfd"]},
        {"key": "git revision", "value": env["git_revision"] or "(not a git checkout)"},
        {"key": "MPI library (mpi4py)", "value": _first_line(env["mpi_library"])},
        {"key": "MPI library (C++ core)", "value": _first_line(env["mpi_library_core"])},
        {"key": "same MPI library", "value": same_library},
        {"key": "MPI standard", "value": env["mpi_standard"]},
        {"key": "thread level provided", "value": env["thread_level"]},
        {"key": "build flags", "value": env["build_flags"]},
        {"key": "ranks", "value": comm.size},
        {"key": "hosts (cores)", "value": ", ".join(sorted({f"{h} ({c})" for h, c in hosts}))},
        {"key": "approaches", "value": ", ".join(hf.approach_names())},
        {"key": "models", "value": ", ".join(hf.model_names())},
        {"key": "schedules", "value": ", ".join(hf.schedule_names())},
        {"key": "transports", "value": ", ".join(hf.transport_names())},
        *({"key": name, "value": version} for name, version in env["versions"].items() if name != "hybridfd"),
    ]
    columns = [{"key": "key", "title": "what"}, {"key": "value", "title": "value"}]
    parameters = {"ranks": comm.size, "output": args.output}
    result = results.new_result("info", "info", "hybridfd info", parameters, columns, rows, argv=args.argv)
    save_and_show(result, args.output)
    if not same_library:
        print("WARNING: mpi4py and hybridfd's C++ core report different MPI libraries")
    return 0
