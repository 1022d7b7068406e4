"""Plumbing of the foreign suites in tests/compat (see compat_routing.py):

* while a test of a wrapper module runs, the names in its ``ROUTES`` are replaced in the
  foreign test module's globals (restored afterwards) and routed parametrized arguments are
  swapped before the call;
* every test listed in ``compat_expected.EXPECTED`` is marked ``xfail(strict=True)`` with the
  documented differences as its reason; an entry that names no collected test is an error
  (a warning with releases other than the table's);
* a wrapper module's ``SAMPLE_EVERY = {"Class": n}`` keeps one in ``n`` of that class's
  tests (a stable choice by test id, always keeping the listed ones) so that ``make test``
  stays fast; ``EINSTRIDE_COMPAT=full`` (``make compat``) runs them all;
* the NumPy calls compared call by call (compat_calls.py) are counted per kind and printed at
  the end of the run; a test during which an unexplained disagreement occurred fails.
"""

from __future__ import annotations

import importlib.metadata
import os
import warnings
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from .compat_calls import NUMPY_CALLS
from .compat_expected import EXPECTED, TABLE_VERSIONS, reason

FULL = os.environ.get("EINSTRIDE_COMPAT") == "full"


def expected_key(item: pytest.Item) -> str:
    """``module.py::Class::test[params]``, whatever directory pytest was started in."""
    return "::".join([item.path.name, *item.nodeid.split("::")[1:]])


def _sampled_out(item: pytest.Item, key: str) -> bool:
    if FULL or key in EXPECTED or not isinstance(item, pytest.Function):
        return False
    every = getattr(item.module, "SAMPLE_EVERY", {}).get(getattr(item.cls, "__name__", ""), 1)
    return every > 1 and zlib.crc32(key.encode()) % every != 0


def _unfiltered(config: pytest.Config) -> bool:
    """Whether this run collects whole files (no -k, -m, --deselect or node ids)."""
    return not (
        config.getoption("keyword")
        or config.getoption("markexpr")
        or config.getoption("deselect")
        or any("::" in arg for arg in config.args)
    )


def _table_release(file: str) -> bool:
    """Whether the installed package is the release the table was made from."""
    package, release = TABLE_VERSIONS[file]
    version = importlib.metadata.version(package)
    return version == release or version.startswith(release + ".")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, dropped, seen, files = [], [], set(), set()
    for item in items:
        key = expected_key(item)
        seen.add(key)
        files.add(item.path.name)
        if key in EXPECTED:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason(EXPECTED[key])))
        (dropped if _sampled_out(item, key) else kept).append(item)
    stale = [key for key in EXPECTED if key.split("::")[0] in files and key not in seen]
    if stale and _unfiltered(config):
        message = "compat_expected.EXPECTED lists tests that do not exist: " + ", ".join(stale)
        if all(_table_release(key.split("::")[0]) for key in stale):
            raise pytest.UsageError(message)
        warnings.warn(message + " (other releases than the table's)", stacklevel=1)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(autouse=True)
def _routed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    routes = getattr(request.module, "ROUTES", None)
    if routes is not None:
        namespace: dict[str, Any] = request.function.__globals__
        for name, replacement in routes.globals.items():
            if name in namespace:
                monkeypatch.setitem(namespace, name, replacement)
    before = len(NUMPY_CALLS.unexplained)
    NUMPY_CALLS.current_test = expected_key(request.node)
    yield
    new = NUMPY_CALLS.unexplained[before:]
    assert not new, "einstride disagrees with NumPy, unexplained by a documented difference:\n" + (
        "\n".join(
            f"  {d.function}{d.call}\n    numpy:     {d.numpy}\n    einstride: {d.einstride}"
            for d in new[:10]
        )
    )


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Iterator[None]:
    routes = getattr(pyfuncitem.module, "ROUTES", None)
    if routes is not None:
        pyfuncitem.funcargs.update(routes.routed_arguments(pyfuncitem.funcargs))
    return (yield)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if NUMPY_CALLS.total:
        terminalreporter.write_sep("-", "einstride vs numpy.einsum, call by call")
        for line in NUMPY_CALLS.summary():
            terminalreporter.write_line(line)
