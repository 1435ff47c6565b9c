"""Style is checked like everything else: ruff for Python, clang-format for C++."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def check(cmd: list[str]) -> None:
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"$ {' '.join(cmd)}\n{result.stdout}\n{result.stderr}"


def test_python_is_ruff_clean() -> None:
    check([str(BIN / "ruff"), "check", "src", "tests", "benchmarks", "dev"])
    check([str(BIN / "ruff"), "format", "--check", "src", "tests", "benchmarks", "dev"])


def test_cpp_is_clang_formatted() -> None:
    sources = sorted(
        str(path.relative_to(ROOT))
        for folder in ("cpp", "tests", "benchmarks", "dev")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".cpp", ".hpp")
    )
    assert sources
    check([str(BIN / "clang-format"), "--dry-run", "--Werror", *sources])


# The project speaks of itself as it is now: git history keeps who did what, when, and
# what was tried before. Papers are cited by title and section, never by a path outside
# the tree.
TEXT_SUFFIXES = {".py", ".cpp", ".hpp", ".md", ".txt", ".toml", ".cmake", ".in", ".supp", ".xml", ".sh", ".cfg"}
TEXT_NAMES = {"Makefile", "CMakeLists.txt", "run", ".gitignore", ".clang-format"}
# The word as a programming term: pytest's fixture scope and hooks, subprocess's option.
PROGRAMMING_TERMS = re.compile(r"""scope=["']session["']|start_new_session|pytest_session\w*|session-scoped""")
HISTORY = {
    "a diary label": re.compile(r"session", re.IGNORECASE),
    "a pointer outside the tree": re.compile(r"\.\./shared|shared/(DESIGN|PEERS|TOOLCHAIN)|\bseeds/"),
    "an issue number as history": re.compile(r"\bissues? #?\d+", re.IGNORECASE),
    "a run's time stamp": re.compile(r"\bUTC\b"),
    "what was not kept": re.compile(r"\bnot kept\b(?!:)", re.IGNORECASE),
}
# A date in prose; a time stamp in data (2026-01-01T00:00:00) is a value, not a dated run.
DATE = re.compile(r"\b20\d\d-[01]\d\b(?!-\d\dT)")
# The one line per measured table or figure that says on which CPU and when it was measured.
MEASURED_LINE = re.compile(r"^(Measured on|Simulated with) [^`]+, 20\d\d-[01]\d: `")


def project_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    paths = [ROOT / name for name in listed.splitlines()]
    this_test = Path(__file__).resolve()  # its patterns name what they look for
    return [
        path
        for path in paths
        if path.exists() and path != this_test and (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES)
    ]


def test_the_project_speaks_of_itself() -> None:
    found = []
    for path in project_text_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
            for what, pattern in HISTORY.items():
                if pattern.search(PROGRAMMING_TERMS.sub("", line)):
                    found.append(f"{what}: {where}")
            if DATE.search(line) and not MEASURED_LINE.match(line.strip()):
                found.append(f"a date outside a 'Measured on' line: {where}")
    assert not found, "\n".join(found)


DOC_LINE_LIMITS = {"performance.md": 460, "simulation.md": 400, "design.md": 600}


def test_docs_are_bounded_and_linked_from_the_readme() -> None:
    docs = sorted((ROOT / "docs").glob("*.md"))
    lines = {path.name: len(path.read_text().splitlines()) for path in docs}
    for name, limit in DOC_LINE_LIMITS.items():
        assert lines.get(name, 0) <= limit, f"docs/{name}: {lines.get(name)} lines, at most {limit}"
    assert sum(lines.values()) <= 2500, f"docs/*.md: {sum(lines.values())} lines together, at most 2,500"
    readme = (ROOT / "README.md").read_text()
    unlinked = [path.name for path in docs if f"(docs/{path.name}" not in readme]
    assert not unlinked, f"docs not linked from README.md: {unlinked}"


def test_every_doc_and_script_named_exists() -> None:
    named = re.compile(r"(?<![\w/.])(?:docs|benchmarks|dev)/[\w./-]+\.(?:md|png|py|cpp)\b")
    missing = [
        f"{path.relative_to(ROOT)}:{number}: {name}"
        for path in project_text_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        for name in named.findall(line)
        if not (ROOT / name).exists()
    ]
    assert not missing, "names of files that do not exist:\n" + "\n".join(missing)
