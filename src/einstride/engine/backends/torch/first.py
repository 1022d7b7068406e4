"""The first call of a shape class on torch tensors: its path run directly with torch
operations, without planning the class.

As on NumPy (:func:`..numpy.direct.first_call_entry`), planning a class costs 0.3-1.8 ms
where its first call's arithmetic often takes microseconds; a user whose sizes change from
call to call meets a new class nearly every call.  So a plain call (no graph, no keyword
but ``optimize=`` and ``memory_limit=``) whose class no call has looked up runs the steps
of :func:`..numpy.direct.first_call_steps` (each product as ``tensordot`` does it: sums,
a permute, a reshape and one ``torch.matmul``, or one ``torch.einsum`` of the pair for a
small or elementwise product) and caches nothing; so does the class's second look (another
shape: :data:`~..numpy.generic.DIRECT_LOOKS`), and the third plans it as before.  A tiny
problem (:func:`..numpy.direct.tiny_equation`) runs so at every new shape, its class
planned or not, and at its first ``PROMOTE_AT - 1`` calls (what its plan runs; planning
costs more than it saves there): two operands as one ``torch.einsum``
(:func:`_one_einsum`), more as the steps.  With a finder asked at the
real sizes every new shape is a first call.  A call that needs a graph (an
operand requires grad) is planned: its backward is einstride's; so is an equation that has
a lane (:mod:`.lanes`: past its bound the lane runs its class's plan, and the call runs
what the lane runs), unless the call is tiny and within the lane's bound (under
``optimize="auto"`` the lane declined it without a plan; under another ``optimize=`` no
lane runs, and the result's layout may differ from the lane's).  The direct way sums in
its own order: a class's first call may round otherwise than the plan (and than the same
call with a graph), and its result may be a permuted view (as torch.einsum's).

>>> import torch
>>> ops = [torch.ones(30, 40, dtype=torch.float64), torch.ones(40, 50, dtype=torch.float64),
...        torch.ones(50, 2, dtype=torch.float64)]
>>> facts = tuple(x for t in ops for x in (t.shape, t.stride(), t.dtype))
>>> clear_first_calls()
>>> first_call("ab,bc,cd->ad", ops, facts, "auto", None, ops[0].device)[0].tolist()
[2000.0, 2000.0]
>>> first_call("ab,bc,cd->ad", ops, facts, "auto", None, ops[0].device) is None  # seen
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ...spec.paths import check_optimize, given_path, optimize_key, path_fits_any_size
from ..numpy.cache import CLEAR_HOOKS
from ..numpy.direct import (
    LOOP_ELEMENTS,
    Step,
    first_call_steps,
    tiny_equation,
    walk_steps,
)
from ..numpy.generic import DIRECT_LOOKS, PROMOTE_AT
from ..numpy.skeleton import c_order_class, dense_class
from .guard import limit_for
from .lanes import lane_bound, lane_for
from .operands import Facts, byte_strides

__all__ = ["clear_first_calls", "first_call"]

_NUMPY_DTYPES = {
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.complex64: np.dtype(np.complex64),
    torch.complex128: np.dtype(np.complex128),
}
"""The dtypes the direct way runs (one that BLAS multiplies, as on NumPy)."""

_SEEN: dict[Any, int] = {}
"""The calls (equation, operand facts, ``optimize=``) seen before, and how many times a
tiny one ran directly (any other: :data:`~..numpy.generic.PROMOTE_AT`): only a call not
seen, or a tiny one run directly fewer than ``PROMOTE_AT - 1`` times, asks for its class or
runs again (another repeated call pays one dictionary look)."""
_LOOKED: dict[Any, int] = {}
"""The shape classes calls have looked up, and how many times (the first
:data:`~..numpy.generic.DIRECT_LOOKS` run directly)."""
_SEEN_MAX = 4096  # calls and classes remembered (then forgotten at once)


def first_call(
    key: Any,
    operands: Sequence[torch.Tensor],
    facts: Facts,
    optimize: Any,
    memory_limit: int | None,
    device: torch.device,
) -> torch.Tensor | None:
    """The result of ``operands`` (plain tensors on ``device`` that need no graph, their
    :func:`.operands.facts_of` ``facts``) when this is one of the first two calls of their
    shape class (or a tiny problem's shape seen fewer than :data:`~..numpy.generic.PROMOTE_AT`
    - 1 times before) and the direct way runs it within the memory limit; else None (the
    planned way)."""
    try:
        seen = (key, facts, optimize)
        calls = _SEEN.get(seen, 0)
    except TypeError:  # (an optimize= list: a path given, planned)
        return None
    if calls >= PROMOTE_AT - 1:
        return None
    _remember(_SEEN, seen, PROMOTE_AT)  # (planned from its next call, unless tiny: below)
    numpy_facts = _numpy_facts(facts)
    if numpy_facts is None:
        return None
    # an equation's lane, past its bound, runs its class's plan: so does its call (within
    # the bound the lane declined it, planning nothing: a tiny call runs directly)
    laned = type(key) is str and lane_for(key) is not None
    tiny = tiny_equation(key, numpy_facts, min(LOOP_ELEMENTS, lane_bound()) if laned else
                         LOOP_ELEMENTS)  # fmt: skip
    if tiny is None and laned:
        return None
    if not calls and path_fits_any_size(optimize, len(operands)):  # (else every new shape
        # is a first call; a tiny call seen before counted its look then)
        reps = c_order_class(numpy_facts) or dense_class(numpy_facts)
        looked = None if reps is None else (key, reps, optimize_key(optimize))
        if looked is None:
            return None
        looks = _LOOKED.get(looked, 0)
        if looks < DIRECT_LOOKS:
            _remember(_LOOKED, looked, looks + 1)
        elif tiny is None:
            return None  # (a tiny problem's new shapes run directly: planning costs more)
    if tiny is not None and _one_einsum(tiny, numpy_facts, optimize, device, memory_limit):
        _SEEN[seen] = calls + 1  # (a tiny call runs what its plan runs: planned late)
        return torch.einsum(tiny, *operands)
    if laned:
        return None  # (planned, as its lane's calls past the bound are)
    found = first_call_steps(key, numpy_facts, None, optimize)
    if found is None:
        return None
    steps, output, _, peak = found
    if tiny is not None:  # (its steps are small torch.einsum calls, which may copy their
        # operands, NumPy's loop does not: each at most the whole problem's combinations)
        peak += 4 * LOOP_ELEMENTS * numpy_facts[2].itemsize
    if peak > limit_for(device, memory_limit):
        return None
    if tiny is not None:
        _SEEN[seen] = calls + 1  # (as above)
    return _run(steps, output, operands)


def _one_einsum(
    letters: str, facts: tuple[Any, ...], optimize: Any, device: torch.device, limit: int | None
) -> bool:
    """Whether a tiny call (``letters``, its NumPy ``facts``) runs as one ``torch.einsum``:
    two operands (past two torch.einsum searches an opt_einsum path, 2-5x the steps' time
    on a ring of tiny matrices), ``optimize=`` a finder's name (an explicit path or an
    optimizer object is followed by the steps, :func:`first_call_steps`, or for an
    equation with a lane by the plan), and what
    torch.einsum may allocate within the memory limit: the result and two copies of each
    operand (a sum, a permuted copy for its bmm)."""
    if len(facts) != 6 or optimize_key(optimize) is None or given_path(optimize, 2) is not None:
        return False
    check_optimize(optimize)  # (no path searched: a bad value is still an error)
    terms, output = letters.split("->")
    size: dict[str, int] = {}
    for term, shape in zip(terms.split(","), facts[0::3]):
        size.update(zip(term, shape))
    copies = 2 * sum(math.prod(shape) for shape in facts[0::3])
    itemsize: int = facts[2].itemsize
    nbytes = (math.prod(size[x] for x in output) + copies) * itemsize
    return bool(nbytes <= limit_for(device, limit))


def _remember(seen: dict[Any, Any], key: Any, value: Any = None) -> None:
    if len(seen) >= _SEEN_MAX:
        seen.clear()
    seen[key] = value


def _numpy_facts(facts: Facts) -> tuple[Any, ...] | None:
    """``facts`` as the NumPy backend names them (byte strides, NumPy dtypes), or None for
    a dtype the direct way does not run."""
    found: list[Any] = []
    for k in range(0, len(facts), 3):
        shape, strides, dtype = facts[k : k + 3]
        numpy_dtype = _NUMPY_DTYPES.get(dtype)
        if numpy_dtype is None:
            return None
        found += (tuple(shape), byte_strides(strides, dtype), numpy_dtype)
    return tuple(found)


def _run(
    steps: Sequence[Step], output: tuple[int, ...], operands: Sequence[torch.Tensor]
) -> torch.Tensor:
    """The steps with torch operations (the NumPy direct way's walk, :func:`walk_steps`)."""
    result: torch.Tensor = walk_steps(steps, operands, torch.einsum, _folded)
    return result.permute(output)


def _folded(x: torch.Tensor, perm: tuple[int, ...], shape: tuple[int, ...]) -> torch.Tensor:
    return x.permute(perm).reshape(shape)


def clear_first_calls() -> None:
    """Forget the calls and classes seen (``einstride.clear_plan_cache()`` calls this)."""
    _SEEN.clear()
    _LOOKED.clear()


CLEAR_HOOKS.append(clear_first_calls)
