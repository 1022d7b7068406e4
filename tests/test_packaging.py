"""The built wheel holds the library and its license, and nothing else (no benchmark harness,
no tests). ``make wheel-check`` goes further: it installs the wheel into a bare venv."""

from __future__ import annotations

import email
import re
import subprocess
import sys
import zipfile
from email.message import Message
from pathlib import Path

import pytest

from einstride import cli

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src"
DIST_INFO = "einstride-0.1.0.dist-info"
CORE = (
    "einstride/__init__.py",
    "einstride/py.typed",
    "einstride/cli.py",
    "einstride/engine/__init__.py",
    "einstride/engine/api.py",
    "einstride/engine/spec/equation.py",
    "einstride/engine/backends/numpy/plan.py",
    "einstride/engine/backends/numpy/execute.py",
    "einstride/ops/__init__.py",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout (no build isolation: hatchling from the dev extra)."""
    folder = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps"]
    command += ["--no-build-isolation", "--no-cache-dir", "-q", "-w", str(folder)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"pip wheel failed (is hatchling installed?):\n{done.stderr}"
    (built,) = folder.glob("einstride-*.whl")
    return built


@pytest.fixture(scope="module")
def names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        return email.message_from_bytes(archive.read(f"{DIST_INFO}/METADATA"))


def _source_files() -> set[str]:
    """What the wheel should hold of the package: every module (and py.typed) of the tree."""
    package = SOURCE / "einstride"
    found = {*package.rglob("*.py"), package / "py.typed"}
    return {path.relative_to(SOURCE).as_posix() for path in found if path.is_file()}


def test_the_wheel_holds_every_module_of_the_package_and_nothing_more(names: set[str]) -> None:
    assert set(CORE) <= names
    package = {name for name in names if not name.startswith(DIST_INFO + "/")}
    assert package == _source_files()


def test_the_wheel_has_no_benchmark_harness_and_no_tests(names: set[str]) -> None:
    parts = {part for name in names for part in Path(name).parts}
    assert not parts & {"bench", "benchmarks", "einstride_bench", "tests", "conftest.py"}
    assert not [name for name in names if "bench" in name or "test" in Path(name).name]


def test_the_license_ships_in_the_dist_info(wheel: Path, names: set[str]) -> None:
    assert f"{DIST_INFO}/licenses/LICENSE" in names
    with zipfile.ZipFile(wheel) as archive:
        shipped = archive.read(f"{DIST_INFO}/licenses/LICENSE").decode()
    assert shipped == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert shipped.startswith("MIT License\n\nCopyright (c) 2026 The einstride authors\n")
    assert _metadata(wheel)["License-Expression"] == "MIT"


def test_the_wheel_installs_the_einstride_command(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        entry_points = archive.read(f"{DIST_INFO}/entry_points.txt").decode()
    assert "einstride = einstride.cli:main" in entry_points
    requires = _metadata(wheel).get_all("Requires-Dist") or []
    runtime = {re.split("[<>=!~; ]", r)[0] for r in requires if "extra ==" not in r}
    assert runtime == {"numpy", "opt-einsum", "ml-dtypes"}


def test_the_command_has_no_bench_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    """A wheel user has no harness: ``make bench`` in a checkout runs it."""
    assert cli.main(["bench"]) == 2
    assert "unknown command 'bench'" in capsys.readouterr().err


# names the typing module gained in Python 3.11 (requires-python says 3.10: a review found
# `from typing import assert_never` made `import einstride` fail there)
_TYPING_FROM_311 = {
    "assert_never", "assert_type", "dataclass_transform", "LiteralString", "Never",
    "NotRequired", "reveal_type", "Required", "Self", "TypeVarTuple", "Unpack",
}  # fmt: skip


def _oldest_python() -> tuple[int, int]:
    found = re.search(r'requires-python = ">=3\.(\d+)"', (ROOT / "pyproject.toml").read_text())
    assert found is not None
    return 3, int(found[1])


@pytest.mark.parametrize("module", sorted(_source_files() - {"einstride/py.typed"}))
def test_every_module_runs_on_the_oldest_python_it_declares(module: str) -> None:
    """Each module parses as the oldest declared Python's grammar and imports nothing of
    ``typing`` that Python lacks (only ``einstride/_compat.py`` may, behind a version check)."""
    import ast

    source = (SOURCE / module).read_text()
    tree = ast.parse(source, feature_version=_oldest_python())
    if module == "einstride/_compat.py":
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in {"typing", "typing_extensions"}:
            late = {alias.name for alias in node.names} & _TYPING_FROM_311
            assert not late, f"{module} imports {sorted(late)} from {node.module}"
