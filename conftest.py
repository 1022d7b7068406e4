"""Without the optional einstride[dask] or einstride[compat] extras, skip the Dask backend's
and the einops backend's doctests (their tests skip themselves with pytest.importorskip)."""

import importlib.util


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


collect_ignore = [] if _installed("dask") else [
    "src/einstride/engine/backends/dask",
    "src/einstride/dask.py",
]
if not _installed("einops"):  # the optional einstride[compat] extra
    collect_ignore.append("src/einstride/einops_backend.py")
