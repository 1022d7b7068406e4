"""The package's shape, read from the source: the import graph has no cycles, the layers import
only downwards (spec <- front end <- backends; the Dask backend is reached only through the
registry), no star imports, and every module is importable by its dotted path.

See docs/architecture.md for the tree these tests hold in place.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import pkgutil
import re
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import einstride

SRC = Path(einstride.__file__).parent
PACKAGE = "einstride"

# cycles that are allowed, each with its reason (none today: add one only with a reason)
ALLOWED_CYCLES: dict[frozenset[str], str] = {}

# call-time (function-local) imports that point up the layers, each with its reason; they are
# left out of the cycle check, and any other upward import is a cycle
CALL_TIME_UPWARD = {
    "einstride.tensors": "Tensor's methods (operators, reshape, sum, ...) are the element-wise "
    "functions, ops and einsum, which take Tensors: like ndarray's methods and numpy's "
    "functions, the methods reach them when called",
}

FRONT_END = (
    "einstride.engine.api",
    "einstride.engine.call",
    "einstride.engine.registry",
    "einstride.engine.expression",
    "einstride.engine.grad",
    "einstride.engine.cli",
    "einstride.engine",
    "einstride",
)
SPEC = "einstride.engine.spec"
BACKENDS = "einstride.engine.backends"
NUMPY_BACKEND = "einstride.engine.backends.numpy"
DASK_BACKEND = "einstride.engine.backends.dask"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not _is_package(importer):
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _function_local(tree: ast.Module) -> set[int]:
    """The ids of the import nodes inside a function body."""
    inside: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(
                id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))
            )
    return inside


def _imports(name: str, *, call_time: bool = True) -> Iterator[tuple[str, int, bool]]:
    """(imported einstride module, line, star) for every import in module ``name``,
    function-local ones included unless ``call_time`` is False."""
    tree = ast.parse(MODULES[name].read_text(), filename=str(MODULES[name]))
    local = set() if call_time else _function_local(tree)
    for node in ast.walk(tree):
        if id(node) in local:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield _known(alias.name), node.lineno, False
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, node)
            if target.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if sub in MODULES else _known(target)), node.lineno, alias.name == "*"


def _known(name: str) -> str:
    """The longest prefix of ``name`` that is one of our modules."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


@functools.cache
def _graph() -> dict[str, frozenset[str]]:
    """Every import edge, call-time ones included, except the listed upward call-time ones."""
    return {
        m: frozenset(t for t, _, _ in _imports(m, call_time=m not in CALL_TIME_UPWARD) if t != m)
        for m in MODULES
    }


def _cycles(graph: dict[str, frozenset[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_graph_is_read_from_every_module() -> None:
    graph = _graph()
    assert "einstride.engine.backends.numpy.plan" in graph["einstride.engine.backends.numpy.cache"]
    assert "einstride.engine.spec.equation" in graph["einstride.engine.call"]
    # function-local imports count too
    # function-local imports are read too (Tensor.reshape imports ops.shape when called)
    assert "einstride.ops.shape" in {t for t, _, _ in _imports("einstride.tensors")}
    assert "einstride.ops.shape" not in {
        t for t, _, _ in _imports("einstride.tensors", call_time=False)
    }


def test_upward_call_time_imports_are_only_the_listed_ones() -> None:
    """Only the listed modules may skip the cycle check, and only for function-local imports:
    their module-level imports still count."""
    for name in CALL_TIME_UPWARD:
        module_level = {t for t, _, _ in _imports(name, call_time=False)}
        assert module_level <= _graph()[name] | {name}


def test_no_import_cycles() -> None:
    cycles = [c for c in _cycles(_graph()) if c not in ALLOWED_CYCLES]
    assert not cycles, [sorted(c) for c in cycles]


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}
    assert _cycles(graph) == [frozenset({"a", "b", "c"})]


def test_the_front_end_and_the_numpy_backend_never_import_dask() -> None:
    offenders = [
        (m, t, line)
        for m in MODULES
        if m in FRONT_END or _under(m, NUMPY_BACKEND) or _under(m, SPEC)
        for t, line, _ in _imports(m)
        if _under(t, DASK_BACKEND) or t == "einstride.dask"
    ]
    assert not offenders


def test_the_spec_layer_imports_no_backend_and_no_front_end() -> None:
    offenders = [
        (m, t, line)
        for m in MODULES
        if _under(m, SPEC)
        for t, line, _ in _imports(m)
        if _under(t, BACKENDS) or t in FRONT_END[:-2]
    ]
    assert not offenders


def test_backends_do_not_import_each_other_except_numpy() -> None:
    """Any backend may run NumPy kernels (the NumPy backend); none may reach another."""
    offenders = []
    for m in MODULES:
        if not _under(m, BACKENDS) or m == BACKENDS:
            continue
        own = ".".join(m.split(".")[:4])
        for t, line, _ in _imports(m):
            if _under(t, BACKENDS) and not _under(t, own) and not _under(t, NUMPY_BACKEND):
                offenders.append((m, t, line))
    assert not offenders


def test_no_star_imports() -> None:
    stars = [(m, line) for m in MODULES for _, line, star in _imports(m) if star]
    assert not stars
    # and none of a third-party module either
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert all(alias.name != "*" for alias in node.names), name


def _needs_missing_library(name: str) -> bool:
    dask_modules = _under(name, DASK_BACKEND) or name == "einstride.dask"
    return dask_modules and importlib.util.find_spec("dask") is None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_is_importable_by_its_dotted_path(name: str) -> None:
    if _needs_missing_library(name):
        pytest.skip("needs an optional library")
    module = importlib.import_module(name)
    assert isinstance(module, types.ModuleType)
    # what `import a.b.c as x` does: walk the attributes; a function must not shadow a module
    found: object = einstride
    for part in name.split(".")[1:]:
        found = getattr(found, part)
    assert found is module, f"{name} is shadowed by {found!r}"


def test_every_module_is_found_by_pkgutil() -> None:
    walked = {m.name for m in pkgutil.walk_packages(einstride.__path__, "einstride.")}
    assert walked | {PACKAGE} == set(MODULES)


def test_public_facades_resolve() -> None:
    pytest.importorskip("dask")
    import einstride.dask as esd

    assert callable(esd.explain) and callable(esd.from_npy)
    import einstride.engine.grad as grad

    assert grad.einsum_vjp is einstride.einsum_vjp


def test_all_lists_hold_only_public_names_that_exist() -> None:
    for name in MODULES:
        if _needs_missing_library(name):
            continue
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", [])
        for item in exported:
            assert not item.startswith("_") or item == "__version__", (name, item)
            assert hasattr(module, item), (name, item)


def test_no_private_name_crosses_modules() -> None:
    """``from x import _private`` between our modules means the decision lives in the wrong
    place (tests may reach in; the library may not)."""
    offenders = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").startswith(PACKAGE)
            ):
                offenders += [(name, a.name) for a in node.names if a.name.startswith("_")]
            if isinstance(node, ast.Attribute) and node.attr.startswith("_PATH_OPTIONS"):
                offenders.append((name, node.attr))
    assert not offenders


def test_the_map_names_every_module() -> None:
    """docs/architecture.md is the map of the tree: every module is named in its tree block,
    within the entry of its own package (``plan`` under ``numpy/`` and again under
    ``torch/``: a review found ordinary words of the prose, and one backend's file naming
    the other's, counting)."""
    doc = (Path(__file__).parents[1] / "docs" / "architecture.md").read_text()
    block = doc.split("```")[1].splitlines()
    unnamed = []
    for name, path in MODULES.items():
        parts = list(path.relative_to(SRC).parts)
        stem = parts.pop()[: -len(".py")]
        if stem == "__init__":
            if not parts:
                continue  # (the package itself: the block's first line)
            stem = parts.pop()
        lines = _entry_lines(block, parts)
        if not any(re.search(rf"(?<![\w.]){re.escape(stem)}(\.py|/|\b)", ln) for ln in lines):
            unnamed.append(name)
    assert not unnamed, f"modules the map does not name under their package: {unnamed}"


def _entry_lines(block: list[str], packages: list[str]) -> list[str]:
    """The lines of the tree block that describe the package ``packages`` (a path of folder
    names): its own line and those indented deeper after it."""
    lines = block
    for package in packages:
        start = next(
            (k for k, ln in enumerate(lines) if ln.strip().startswith(f"{package}/")), None
        )
        if start is None:
            return []
        indent = len(lines[start]) - len(lines[start].lstrip())
        end = start + 1
        while end < len(lines) and (
            not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
        ):
            end += 1
        lines = lines[start:end]
    return lines
