"""The torch backend's entry points (what the registry calls): ``einsum(call)`` and
``explain(call)``.

A call runs the cached plan for its operands' layouts over torch views; when an operand
requires grad (and grad mode is on) it runs inside :class:`.autograd.EinsumFunction`, so the
result carries a graph whose backward is einstride too (an n-ary call one path step at a
time, see :mod:`.stepwise`); a call that is one operand permuted, or one ``torch.sum``
of it in its own dtype (:func:`.execute.one_native`), or that a lane runs
(:mod:`.lanes`), runs under torch's own autograd.

>>> import torch
>>> from ...call import make_call
>>> einsum(make_call("i->ii", torch.tensor([1, 2])))     # torch.einsum cannot
tensor([[1, 0],
        [0, 2]])
>>> einsum(make_call("ij,jk->ik", torch.ones(2, 3), torch.ones(3, 2, dtype=torch.float64)))
tensor([[3., 3.],
        [3., 3.]], dtype=torch.float64)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import torch

from ....errors import EinsumError, EinsumTypeError
from ....tensors import Tensor
from ...call import EinsumCall, result_order
from ...registry import HOT_PATHS, LANE_REPORTS
from ...spec.dtypes import check_casting
from ...spec.equation import quoted
from ...spec.paths import derived_optimize
from .autograd import Backward, EinsumFunction
from .dtypes import numpy_dtype, torch_dtype
from .first import first_call
from .guard import limit_for
from .lanes import lane_for, lane_report
from .operands import Facts, as_tensors, check_out, facts_of, rounded_tensors
from .plan import Entry, entry_for
from .records import check_memory
from .report import format_torch_plan
from .stepwise import by_steps, kept_peak, runs_by_steps

__all__ = ["cast_like", "einsum", "einsum_path", "explain", "hot"]

_apply = cast(Callable[..., torch.Tensor], EinsumFunction.apply)  # torch leaves it untyped


def _entry(call: EinsumCall, tensors: list[torch.Tensor]) -> Entry:
    out = call.out
    out_facts = (out.shape, out.stride(), out.dtype) if isinstance(out, torch.Tensor) else None
    return entry_for(call.key, facts_of(tensors), out_facts, call.dtype, call.optimize)


def _guard(entry: Entry, device: torch.device, memory_limit: int | None) -> None:
    """Before anything is allocated: the memory limit bounds the plan's peak (a single
    allocation over it is named), and what torch cannot run is refused."""
    if entry.integer_products and device.type != "cpu":
        raise EinsumTypeError(
            f"einsum {quoted(entry.text)}: the plan multiplies matrices of integers or "
            f"bools, which torch does not do on {device}; cast the operands to a "
            "floating dtype (or run on the CPU)"
        )
    if entry.peak == 0:
        return
    limit = limit_for(device, memory_limit)
    if entry.peak > limit:
        check_memory(entry.plan, limit)
        raise EinsumError(
            f"einsum {quoted(entry.text)}: the plan would allocate {entry.peak:,} bytes at its "
            f"peak, more than the memory limit of {limit:,} bytes (on torch, einsum does not slice "
            "a contraction to fit)"
        )


def _autograd_line(entry: Entry, device: torch.device, memory_limit: int | None) -> str:
    """What a call under autograd keeps: its steps' results, or (past the limit) none."""
    kept = _steps_kept(entry, device, memory_limit)
    if kept is not None:
        return (
            "\n  autograd: the steps run one by one and keep their results for the backward:"
            f" peak {kept:,} B"
        )
    return (
        f"\n  autograd: by steps, their kept results ({kept_peak(entry.plan):,} B) would pass "
        "the memory limit: one function for the call, its backward einstride's (none kept)"
    )


def _steps_kept(entry: Entry, device: torch.device, memory_limit: int | None) -> int | None:
    """The bytes a call by steps under autograd holds (:func:`.stepwise.kept_peak`: each
    step's result kept for the backward) where it runs by steps and they fit the limit;
    None where the call runs as one :class:`.autograd.EinsumFunction`, which keeps none
    (a review: the plan's peak, which frees them, let 720,000 bytes pass a 640,000 limit;
    refusing then refused calls that fit as one function)."""
    if not runs_by_steps(entry.plan):
        return None
    kept = kept_peak(entry.plan)
    return kept if kept <= limit_for(device, memory_limit) else None


def einsum(call: EinsumCall) -> torch.Tensor:
    """Run ``call`` on its torch operands' device; a torch tensor (``out=`` when given),
    laid out by ``order=`` as NumPy's."""
    result = _einsum(call)
    return result if call.order == "K" or call.out is not None else _in_order(result, call)


def _in_order(result: torch.Tensor, call: EinsumCall) -> torch.Tensor:
    """NumPy's ``order=`` layout of a result (``A``: Fortran when every operand is Fortran
    contiguous, :func:`.call.result_order`; a review found order= ignored on torch)."""
    if result.dim() < 2:
        return result
    fortran = [_fortran_operand(t) for t in call.operands]
    if result_order(call.order, fortran) == "C":
        return result.contiguous()
    if _fortran(result):
        return result
    reversed_axes = tuple(range(result.dim() - 1, -1, -1))
    return result.permute(reversed_axes).contiguous().permute(reversed_axes)


def _fortran(t: torch.Tensor) -> bool:
    return t.dim() >= 2 and t.permute(tuple(range(t.dim() - 1, -1, -1))).is_contiguous()


def _fortran_operand(x: Any) -> bool:
    """Whether an operand is Fortran contiguous (a vector or scalar is; another operand
    kind as NumPy would convert it)."""
    if isinstance(x, torch.Tensor):
        return x.dim() < 2 or _fortran(x)
    return bool(np.asarray(x).flags.f_contiguous)


def _einsum(call: EinsumCall) -> torch.Tensor:
    if call.out is None and call.dtype is None and call.casting is None and call.operands:
        if call.memory_limit is None and type(call.key) is str:
            # the registry's hot path, as every later such call takes it: a process's first
            # call (which imports this backend, and registers it) built another graph, and
            # a non-reentrant checkpoint's recomputation then failed (a review)
            result = hot(call.key, call.operands, call.optimize)
        else:
            result = _plain_run(call.key, call.operands, call.optimize, call.memory_limit)
        if result is not None:
            return result
    given, device = as_tensors(call.operands)
    tensors = rounded_tensors(given, call.dtype)
    entry = _entry(call, tensors)
    _check_casting(call, given, entry)
    graph = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
    out = None if call.out is None else _checked_out(call, given, device, entry, graph)
    by_steps_too = call.dtype is None and call.out is None
    _guard(entry, device, call.memory_limit)
    if graph:
        return _graph(call.key, call.optimize, call.memory_limit, entry, tensors, by_steps_too)
    return entry.run(tensors, out)


def _graph(
    key: Any,
    optimize: Any,
    memory_limit: int | None,
    entry: Entry,
    tensors: Sequence[Any],
    by_steps_too: bool = True,
) -> torch.Tensor:
    """The result with its graph: one :class:`.autograd.EinsumFunction` for the call, one
    per path step (:mod:`.stepwise`), or torch's own for one operand permuted or one
    ``torch.sum`` of it in its own dtype (:func:`.execute.one_native`)."""
    if entry.native:
        return entry.run(tensors, None)
    device = tensors[0].device if tensors else torch.device("cpu")
    if by_steps_too and _steps_kept(entry, device, memory_limit) is not None:
        optimize = derived_optimize(optimize)

        def step(step_key: Any, operands: tuple[torch.Tensor, ...]) -> torch.Tensor:
            # (each step the plan's own product: never a first call's direct way)
            result = _plain_run(step_key, operands, optimize, memory_limit, first=False)
            if result is None:  # not plain, or over the limit: the full path says why
                call = EinsumCall(
                    key=step_key, operands=operands, optimize=optimize, memory_limit=memory_limit
                )
                result = einsum(call)
            return result

        return by_steps(entry.plan, entry.memo, tensors, step)
    return _with_graph(key, optimize, memory_limit, entry, tensors)


def _with_graph(
    key: Any, optimize: Any, memory_limit: int | None, entry: Entry, tensors: Sequence[Any]
) -> torch.Tensor:
    """The result inside :class:`.autograd.EinsumFunction`, whose backward is einstride."""
    backward = Backward(
        key=key,
        optimize=optimize,
        memory_limit=memory_limit,
        einsum=einsum,
        memo=entry.memo,
        lookup=_gradient_entry,
        within_limit=within_limit,
    )
    return _apply(backward, entry.run, *tensors)


def explain(call: EinsumCall) -> str:
    """The plan report of ``call`` for its operands' actual layouts (nothing is computed)."""
    tensors, device = as_tensors(call.operands)
    entry = _entry(call, rounded_tensors(tensors, call.dtype))
    _check_casting(call, tensors, entry)  # (explain took no casting=: a review)
    graph = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
    if call.out is not None:  # checked as einsum checks it (a review: autograd's rule too)
        _checked_out(call, tensors, device, entry, graph)
    report = format_torch_plan(entry, device)
    if graph and call.dtype is None and call.out is None and runs_by_steps(entry.plan):
        report += _autograd_line(entry, device, call.memory_limit)  # (a review: not said)
    try:
        _guard(entry, device, call.memory_limit)
    except (EinsumError, TypeError) as exc:  # what einsum would raise (a review: not said)
        limit = limit_for(device, call.memory_limit)
        return (
            f"{report}\n  memory limit: {limit:,} B; einsum would raise {type(exc).__name__}: {exc}"
        )
    return report


def _check_casting(call: EinsumCall, given: list[torch.Tensor], entry: Entry) -> None:
    """NumPy's ``casting=`` rule: every operand (as given) into the computation dtype."""
    if call.casting is not None:
        dtypes = [numpy_dtype(t.dtype, f"operand {i} has dtype") for i, t in enumerate(given)]
        check_casting(dtypes, numpy_dtype(entry.result, "the result has dtype"), call.casting)


def _checked_out(
    call: EinsumCall, given: list[torch.Tensor], device: torch.device, entry: Entry, graph: bool
) -> torch.Tensor:
    """``out=`` checked before anything runs: no autograd through it (``graph``: an operand
    requires grad), then :func:`.operands.check_out`'s rules."""
    if graph or (torch.is_grad_enabled() and getattr(call.out, "requires_grad", False)):
        raise EinsumTypeError(
            f"einsum {quoted(entry.text)}: out= does not take part in autograd (an operand or "
            "out requires grad); drop out= or run under torch.no_grad()"
        )
    return check_out(
        call.out, given, device, entry.result, entry.output_shape, entry.text,
        call.operands, call.casting,
    )  # fmt: skip


def einsum_path(call: EinsumCall) -> tuple[list[tuple[int, ...]], str]:
    """The path the call runs on torch and its report (the registry's ``einsum_path``)."""
    tensors, _ = as_tensors(call.operands)
    path = [tuple(entry) for entry in _entry(call, rounded_tensors(tensors, call.dtype)).plan.path]
    return path, explain(call)


_Tensor = torch.Tensor
_STRIDED = torch.strided


def hot(subscripts: str, operands: tuple[Any, ...], optimize: Any) -> torch.Tensor | None:
    """The registry's hot path: plain tensors on one device, a cached plan within the
    memory limit; None for anything else (:func:`einsum` then runs it).

    >>> hot("ij->ji", (torch.ones(2, 3),), "auto").shape
    torch.Size([3, 2])
    >>> hot("ii->i", (torch.ones(3, 3, requires_grad=True),), "auto").grad_fn.name()
    'EinsumFunctionBackward'
    >>> hot("ij,jk,kl->il", (torch.ones(2, 2, requires_grad=True),) * 3, "auto").sum()
    tensor(16., grad_fn=<SumBackward0>)
    >>> hot("ij->ji", ([[1.0]],), "auto") is None      # not a tensor: the full path
    True

    A small product of the matmul form runs in its equation's lane first
    (:mod:`.lanes`: no plan, no cache look).
    """
    if optimize == "auto" and type(subscripts) is str:
        lane = lane_for(subscripts)
        if lane is not None:
            result = lane(operands)
            if result is not None:
                return cast(torch.Tensor, result)
    return _plain_run(subscripts, operands, optimize, None)


_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)


def _plain_run(
    key: Any,
    operands: tuple[Any, ...],
    optimize: Any,
    memory_limit: int | None,
    *,
    first: bool = True,
) -> torch.Tensor | None:
    """:func:`hot` for any equation key and memory limit (the backward's and the path
    steps' calls take it too: ``first`` False, a shape class's first call planned)."""
    plain = _plain_facts(operands)
    if plain is None:
        return None
    facts, graph, device = plain
    if first and not graph:  # (a shape class's first call: its path run directly, .first)
        result = first_call(key, operands, facts, optimize, memory_limit, device)
        if result is not None:
            return result
    entry = entry_for(key, facts, None, None, optimize)
    if not within_limit(entry, device, memory_limit):
        return None
    if graph:
        return _graph(key, optimize, memory_limit, entry, operands)
    return entry.run(operands, None)


def _plain_entry(
    key: Any, operands: tuple[Any, ...], optimize: Any, dtype: Any = None
) -> tuple[Entry, bool, torch.device] | None:
    """The cached entry of plain tensors on one device, whether its result needs a graph,
    and the device; None for anything else (the full path runs it).  The memory limit is
    the caller's to check: it may change from call to call on the same entry."""
    plain = _plain_facts(operands)
    if plain is None:
        return None
    facts, graph, device = plain
    return entry_for(key, facts, None, dtype, optimize), graph, device


def _plain_facts(operands: tuple[Any, ...]) -> tuple[Facts, bool, torch.device] | None:
    """The facts of plain tensors on one device (:func:`.operands.facts_of`), whether their
    result needs a graph, and the device; None for anything else."""
    if type(operands[0]) not in _PLAIN_TYPES:
        return None  # a list, a scalar, an einstride Tensor: converted on the full path
    facts: list[Any] = []
    device = operands[0].device
    graph = False
    for t in operands:
        if (
            type(t) not in _PLAIN_TYPES
            or t.layout is not _STRIDED
            or t.device != device
            or t.is_conj()
            or t.is_neg()
            or t.is_nested
        ):
            return None
        graph = graph or t.requires_grad
        facts += (t.shape, t.stride(), t.dtype)
    return tuple(facts), graph and torch.is_grad_enabled(), device


def within_limit(entry: Entry, device: torch.device, memory_limit: int | None) -> bool:
    """Whether ``entry`` runs on ``device`` as it is: its peak within the memory limit, and
    no integer matrix product off the CPU (else the full path raises the error)."""
    if entry.integer_products and device.type != "cpu":
        return False
    return entry.peak <= limit_for(device, memory_limit)


def _gradient_entry(call: EinsumCall) -> Entry | None:
    """The entry a backward einsum runs on without a graph (None: it takes the full path);
    the memory limit is checked on each run (:func:`within_limit`), not here, so that one
    call's tight ``memory_limit=`` does not send every later backward the full way."""
    found = _plain_entry(call.key, call.operands, call.optimize, call.dtype)
    return found[0] if found is not None and not found[1] else None


HOT_PATHS[_Tensor] = hot
LANE_REPORTS[_Tensor] = lane_report


def cast_like(grad: torch.Tensor, like: Any) -> torch.Tensor:
    """A gradient (``einsum_vjp``'s) in its operand's dtype, on its device, a real operand's
    the real part (as JAX's); for an operand that is not a tensor, the dtype the backend
    converts it to (a NumPy array's or Tensor's own, a list's or number's torch's default;
    a review found them in NumPy's dtype, and a torch operand's gradient on the CPU where
    the backward einsum held no other tensor).

    >>> cast_like(torch.tensor([1 + 2j]), torch.zeros(1)).tolist()
    [1.0]
    >>> cast_like(torch.ones(1, dtype=torch.float64), [1.0]).dtype
    torch.float32
    """
    device = like.device if isinstance(like, torch.Tensor) else grad.device
    if isinstance(like, torch.Tensor):
        dtype = like.dtype
    elif isinstance(like, (np.ndarray, Tensor)):
        dtype = torch_dtype(like.dtype, "an operand of dtype")
    else:
        dtype = torch.as_tensor(like).dtype
    if grad.is_complex() and not dtype.is_complex:
        grad = grad.real
    return grad.to(device=device, dtype=dtype)
