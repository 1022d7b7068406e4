"""The locks einstride keeps, made so that a forked child can take them.

A child forked while another thread of its parent holds a lock inherits that lock held, by
a thread that does not exist in the child: its first ``einsum`` waited forever (a review:
a multiprocessing worker forked from a server thread's parent).  Every lock einstride keeps
is made here and re-initialised (released) in the child right after ``fork``, as the
standard library's logging re-initialises its own.

>>> guard = rlock()
>>> with guard:
...     _reinit_in_child()          # what a child forked here would run
...     guard.acquire(blocking=False)
True
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

__all__ = ["lock", "rlock"]

_LOCKS: weakref.WeakSet[Any] = weakref.WeakSet()  # every lock made here that is alive


def lock() -> Any:
    """A ``threading.Lock`` that a forked child gets released."""
    found = threading.Lock()
    _LOCKS.add(found)
    return found


def rlock() -> Any:
    """A ``threading.RLock`` that a forked child gets released."""
    found = threading.RLock()
    _LOCKS.add(found)
    return found


def _reinit_in_child() -> None:
    for held in list(_LOCKS):
        held._at_fork_reinit()  # CPython's own (logging and concurrent.futures call it)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reinit_in_child)
