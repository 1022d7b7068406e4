"""Vector-Jacobian products of einsum, computed as einsums over the same engine.

einsum is linear in each operand, so the gradient of operand ``k`` is the einsum of the
cotangent with every *other* operand, producing operand ``k``'s own term:

* a label repeated in operand ``k`` (``iii->i``) appears repeated in the backward *output*:
  a diagonal expansion (``i->iii``), written through a strided view;
* a label repeated in the forward output (``i->ii``) appears repeated in the backward
  *input* (the cotangent): a diagonal extraction, a zero-copy view;
* a label of operand ``k`` that appears nowhere else (summed in the forward pass) is
  broadcast back: it enters the backward equation through a zero-stride vector of ones;
* a size-1 ``...`` axis that broadcast against a larger one gets a label of its own, so the
  backward pass sums over the broadcast dimension and keeps the size-1 axis.

Complex operands follow JAX's ``vjp`` for holomorphic maps: no conjugation.

>>> import numpy as np
>>> a, b = np.arange(6.0).reshape(2, 3), np.ones((3, 2))
>>> ga, gb = einsum_vjp("ij,jk->ik", (a, b), np.ones((2, 2)))
>>> ga
array([[2., 2., 2.],
       [2., 2., 2.]])
>>> einsum_vjp("ii->", (np.ones((3, 3)),), np.array(2.0))[0]
array([[2., 0., 0.],
       [0., 2., 0.],
       [0., 0., 2.]])
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import memory as _memory
from ..errors import EinsumError, EinsumTypeError, MemoryLimitError
from ..memory import check_listing
from ..tensors import any_tensor, as_array, wrap_like
from .api import einsum
from .backends.numpy.backend import as_arrays
from .backends.numpy.backend import cast_like as numpy_cast_like
from .backends.numpy.execute import numpy_equation
from .call import check_known_shape, decoded, make_call
from .registry import DEFAULT, backend_for
from .spec.backward import EquationKey
from .spec.backward import backward_equations as _backward_equations
from .spec.dtypes import check_numeric, result_dtype
from .spec.equation import parse_sublists, quoted
from .spec.paths import derived_optimize

__all__ = ["einsum_vjp"]

Array = np.ndarray[Any, Any]


def _equation_key(subscripts: Any, n_operands: int) -> EquationKey:
    """The string form as is; the sublist form (one sublist per operand, then optionally the
    output sublist) as a hashable tuple of tuples."""
    subscripts = decoded(subscripts)  # (ASCII bytes, as einsum takes them)
    if isinstance(subscripts, str):
        return subscripts
    if isinstance(subscripts, (list, tuple)) and len(subscripts) in (n_operands, n_operands + 1):
        # every label checked on every call, as einsum's: the backward equations are cached
        # by the key, where True and 1.0 equal 1 (a review found them accepted after a call
        # with 1); the error says which label is wrong, the output's too
        output = subscripts[n_operands] if len(subscripts) > n_operands else None
        parse_sublists(subscripts[:n_operands], output)  # (so every label is hashable)
        terms = tuple(tuple(sublist) for sublist in subscripts[:n_operands])
        return terms if output is None else (*terms, tuple(output))  # (None: implicit mode)
    raise EinsumTypeError(
        "einsum_vjp: subscripts must be an equation string or a sequence of sublists, one per "
        "operand and optionally one for the output"
    )


def einsum_vjp(
    subscripts: str, operands: Sequence[Any], cotangent: Any, *, optimize: Any = "auto"
) -> tuple[Any, ...]:
    """One gradient per operand (same shape and dtype) of ``<cotangent, einsum(...)>``.

    ``subscripts`` is any equation ``einsum`` accepts (implicit mode, ellipses, repeated
    input and output labels), as a string or as sublists (one per operand, then optionally
    the output's); ``cotangent`` has the forward result's shape.  ``optimize`` is passed to
    the backward einsums (an explicit path list is not: their operand counts differ; nor is
    ``False``, left to right in the order of operands they do not keep, nor one of
    opt_einsum's single-use random optimizers: :func:`.spec.paths.derived_optimize`).

    >>> einsum_vjp(([0, 1], [1], [0]), (np.ones((2, 3)), np.arange(3.0)), np.ones(2))[1]
    array([2., 2., 2.])
    """
    if isinstance(operands, (str, bytes)) or not isinstance(operands, Sequence):
        raise EinsumTypeError("einsum_vjp: operands must be a sequence of arrays")
    check_listing(operands, "einsum_vjp operands")  # (a range(10**12): NumPy's MemoryError)
    backend = backend_for([*operands, cotangent])
    native = backend.__name__ == DEFAULT
    arrays, cot = _arrays(operands, cotangent, native)
    if native and cot.dtype.kind == "c" and all(x.dtype.kind != "c" for x in arrays):
        # each gradient is the real part of a product of real operands and the cotangent:
        # the product of its real part (no complex buffer, whose .real view a gradient kept
        # alive: 1.96x the limit, a review)
        cot = cot.real
    shapes = tuple(_shape(x) for x in arrays)
    spec, inputs, fills = _backward_equations(_equation_key(subscripts, len(arrays)), shapes)
    output = spec.output
    if _shape(cot) != spec.output_shape:
        raise EinsumError(
            f"einsum_vjp {quoted(spec.text)}: the cotangent has shape {_shape(cot)}, "
            f"but the result has shape {spec.output_shape}"
        )
    optimize = derived_optimize(optimize, len(arrays))
    tensor_out = native and any_tensor(*operands, cotangent)
    # (within the limit less the gradients made, where they take half of it or more: below,
    # each backward einsum within the limit, on its fast paths: a keyword costs 20-70 µs)
    limit = _gradients_fit(spec.text, arrays) if native else None
    wanted = _promoted([getattr(x, "dtype", None) for x in [*arrays, cot]])  # the forward's
    grads, held = [], 0  # (the bytes of the gradients made so far: they stay alive)
    for k, x in enumerate(arrays):
        terms: list[tuple[int, ...]] = [tuple(output)]
        operands_k: list[Any] = [cot]
        for j, (other, term) in enumerate(zip(arrays, inputs)):
            if j != k:
                terms.append(term)
                operands_k.append(other)
        keywords = _in_the_forward_dtype(wanted, operands_k)  # (fills promote to any)
        labels, sizes = fills[k]
        if native and labels:  # one operand: no path search over them (a review: 10 s)
            terms.append(labels)
            operands_k.append(np.broadcast_to(np.ones(1, cot.dtype), sizes))
        elif labels:
            for label, size in zip(labels, sizes):
                terms.append((label,))
                operands_k.append(np.ones(size, bool))
        args = _einsum_arguments(terms, inputs[k], operands_k)
        if native:  # through einsum: its lanes and hot paths (the first gradient's)
            try:
                grad = _native_gradient(args, operands_k, x, optimize, keywords, limit, held)
            except (EinsumError, MemoryLimitError) as exc:  # named as the caller's call
                raise _limit_named(exc, spec.text, k, held) from None
            held += grad.nbytes
            grads.append(wrap_like(grad, tensor_out))
        else:  # the backend of the whole product, as the cotangent alone may be NumPy's
            try:
                grad = backend.einsum(make_call(*args, optimize=optimize, **keywords))
            except TypeError as exc:  # a dtype the backend refuses, named as the user gave it
                raise _renamed(exc, k, len(arrays)) from None
            # the operand as given: a list is converted by the backend, not NumPy (a review)
            grads.append(backend.cast_like(grad, operands[k]))
    return tuple(grads)


def _arrays(operands: Sequence[Any], cotangent: Any, native: bool) -> tuple[list[Any], Any]:
    """The operands and the cotangent as the backend takes them, checked numeric (an
    operand may never reach an einsum below): NumPy's as ndarrays; for another backend its
    arrays as given (a torch tensor that requires grad keeps its graph: ``.numpy()`` raised
    on it, a review; a Dask array stays lazy), anything else (a list, a scalar, a string)
    converted by NumPy's rules, so that the error names the right argument."""
    given = [*operands, cotangent]
    if native:
        arrays, _ = as_arrays(given)
    else:
        arrays = [x if _is_array(x) else as_arrays([x])[0][0] for x in given]
    for k, x in enumerate(arrays):
        what = f"operand {k}" if k < len(operands) else "the cotangent"
        if isinstance(x.dtype, np.dtype):  # Dask's and NumPy's; torch's are all numeric
            check_numeric(x.dtype, f"{what} has dtype")
        check_known_shape(x.shape, what)
    return arrays[:-1], arrays[-1]


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in x.shape)


def _renamed(exc: TypeError, k: int, n: int) -> TypeError:
    """``exc`` of operand ``k``'s backward einsum (the cotangent, then the other operands)
    naming its operand as the user's call numbers it (a review: a torch float8 operand 0
    was "operand 1", the cotangent "operand 0").

    >>> str(_renamed(TypeError("einsum: operand 1 has dtype x"), 1, 3))
    'einsum: operand 0 has dtype x'
    >>> str(_renamed(TypeError("einsum: operand 0 has dtype x"), 1, 3))
    'einsum: the cotangent has dtype x'
    >>> str(_renamed(TypeError("on cpu (operand 0), meta (operand 1), cpu (operand 2)"), 0, 3))
    'on cpu (the cotangent), meta (operand 1), cpu (operand 2)'
    """
    others = [j for j in range(n) if j != k]

    def user_name(found: re.Match[str]) -> str:
        i = int(found.group(1))
        if i > len(others):
            return found.group(0)  # (a ones operand of the backward einsum: none of theirs)
        return "the cotangent" if i == 0 else f"operand {others[i - 1]}"

    message = re.sub(r"operand (\d+)", user_name, str(exc))  # (every mention: a review)
    if message == str(exc):
        return exc
    try:
        return type(exc)(message)
    except TypeError:  # (an exception class that takes other arguments)
        return exc


def _native_gradient(
    args: tuple[Any, ...],
    used: Sequence[Any],
    like: Any,
    optimize: Any,
    keywords: dict[str, Any],
    limit: int | None,
    held: int,
) -> Any:
    """One gradient by NumPy's backend, in ``like``'s dtype.  Where the gradients take half
    the limit or more (``limit``), within what those made before leave (``held``); one
    computed in another dtype (float32 operands, a float64 cotangent) is then written into
    a new array of ``like``'s dtype, einsum counting its own buffer in the wider one (its
    result and the cast copy beside it took 1.5x the limit: a review)."""
    if limit is None:
        return numpy_cast_like(as_array(einsum(*args, optimize=optimize, **keywords)), like)
    computed = keywords.get("dtype") or result_dtype([np.dtype(x.dtype) for x in used])
    if computed == like.dtype or not np.can_cast(computed, like.dtype, "same_kind"):
        # (the first gradient within the process's limit, on einsum's fast paths; a complex
        # product into a real or bool operand's dtype is cast_like's real part: an unsafe
        # cast into out= made a bool of the imaginary part too, a review)
        within = {"memory_limit": limit - held} if held else {}
        grad = as_array(einsum(*args, optimize=optimize, **within, **keywords))
        return numpy_cast_like(grad, like)
    out = np.empty(like.shape, like.dtype)  # (within the limit: _gradients_fit)
    einsum(*args, optimize=optimize, out=out, casting="same_kind",
           memory_limit=limit - held - out.nbytes, **keywords)  # fmt: skip
    return out


def _limit_named(exc: ValueError, text: str, k: int, held: int) -> ValueError:
    """A backward einsum's refusal under the memory limit as ``einsum_vjp``'s: it named an
    equation the caller never wrote and a limit less the gradients made before (a review);
    other errors as they are."""
    if "memory limit" not in str(exc):
        return exc
    made = f" (the gradients before it hold {held:,} bytes of it)" if held else ""
    return type(exc)(
        f"einsum_vjp {quoted(text)}: the gradient of operand {k} does not fit the memory "
        f"limit of {_memory.LIMIT:,} bytes{made}: {exc}"
    )


def _gradients_fit(text: str, arrays: Sequence[Any]) -> int | None:
    """The memory limit (the process's) where the gradients together (each its operand's
    shape and dtype) take half of it or more, else None; more than all of it is an
    ``EinsumError``.  They are all alive when the call returns, so a call whose backward
    einsums each fit the limit could peak past it (a review: three 320 KB gradients under
    a 500 KB limit, a peak of 1.1 MB); from half the limit on, each backward einsum keeps
    within what the gradients made before it leave (the call's peak within the limit),
    below it within the limit itself (the call's within 1.5 times it)."""
    limit = _memory.LIMIT
    need = sum(math.prod(np.shape(x)) * np.dtype(x.dtype).itemsize for x in arrays)
    if need > limit:
        raise EinsumError(
            f"einsum_vjp {quoted(text)}: the gradients would allocate {need:,} bytes "
            f"together, more than the memory limit of {limit:,} bytes"
        )
    return limit if 2 * need >= limit else None


def _in_the_forward_dtype(wanted: Any, used: Sequence[Any]) -> dict[str, Any]:
    """``dtype=`` for a backward einsum whose own operands (``used``) promote to less than
    ``wanted``, the forward's operands' and the cotangent's dtype together (:func:`_promoted`):
    an int8 cotangent times an int8 operand wrapped where the forward ran in float64, bool
    cotangents summed as ORs (a review); none where they agree.  Each backend's own
    promotion: NumPy's for NumPy's and Dask's dtypes, torch's for torch's (a review: torch's
    gradients wrapped too)."""
    own = [getattr(x, "dtype", None) for x in used]
    if wanted is None or all(d == wanted for d in own):
        return {}
    numpy_own = [d for d in own if isinstance(d, np.dtype)]
    if len(numpy_own) == len(own):
        return {} if result_dtype(numpy_own) == wanted else {"dtype": wanted}
    # torch promotes a 0-d tensor by its category only (float16 times a 0-d float32 is
    # float16): only operands all of the wanted dtype are sure to compute in it
    return {} if all(d == wanted for d in own) else {"dtype": wanted}


def _promoted(dtypes: Sequence[Any]) -> Any:
    """The common dtype of ``dtypes`` under their arrays' own rules (NumPy's; torch's
    ``promote_types``), None for a mix or another kind."""
    if all(isinstance(d, np.dtype) for d in dtypes):
        return result_dtype(dtypes)
    torch = sys.modules.get("torch")  # (loaded: its tensors are here)
    if torch is not None and all(isinstance(d, torch.dtype) for d in dtypes):
        try:
            return functools.reduce(torch.promote_types, dtypes)
        except RuntimeError:  # float8: the backward einsum refuses it, as einsum does
            return None
    return None


def _einsum_arguments(
    terms: Sequence[tuple[int, ...]], result: tuple[int, ...], operands: Sequence[Any]
) -> tuple[Any, ...]:
    """``einsum``'s arguments for a backward equation: the string form where every label
    has a letter (a small product, a sum or an expansion then takes a lane: measured, both
    gradients of a 4 x k x 16 by 4 x 16 x 16 batched matmul 350 -> 66 µs on a new k, 107-125
    -> 37 µs repeated), else sublists.

    >>> _einsum_arguments([(0, 1), (1, 2)], (0, 2), ["a", "b"])
    ('ab,bc->ac', 'a', 'b')
    >>> _einsum_arguments([(0, 60)], (0,), ["a"])
    ('a', [0, 60], [0])
    """
    if (equation := numpy_equation(terms, result)) is not None:
        return (equation, *operands)
    args: list[Any] = []
    for operand, term in zip(operands, terms):
        args += [operand, list(term)]
    return (*args, list(result))
