"""Without the optional einstride[dask], einstride[compat] or einstride[torch] extras, skip
the Dask backend's, the einops backend's and the torch backend's doctests (their tests skip
themselves)."""

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
if not _installed("torch"):  # the optional einstride[torch] extra
    collect_ignore.append("src/einstride/engine/backends/torch")
