"""Call-by-call comparison with NumPy: every ``einsum``/``einsum_path`` call NumPy's own test
suite makes runs through both ``numpy`` and ``einstride``; the two outcomes (value, dtype,
shape, result kind, exception class) are compared, and every disagreement is either
explained by a documented difference (``classify``) or reported as unexplained.

The compared call returns NumPy's result (or raises its exception), so the suite runs every
call it makes, as it does natively (the suite judging einstride's results is
test_numpy_einsum.py); einstride runs first on the same arguments, and whatever it wrote into
``out=`` is restored before NumPy runs.
"""

from __future__ import annotations

import collections
import contextlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import einstride

from .compat_expected import Difference

__all__ = ["NUMPY_CALLS", "CallLedger", "Outcome", "classify", "compared", "outcome_of"]


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What one call gave: a value (a copy) or an exception."""

    value: Any = None
    error: BaseException | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


def _snapshot(result: Any) -> Any:
    if isinstance(result, np.ndarray):
        return result.copy()
    if isinstance(result, tuple | list):  # einsum_path: (path, report)
        return type(result)(result)
    return result


def outcome_of(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Outcome:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Outcome(value=_snapshot(function(*args, **kwargs)))
    except Exception as exc:
        return Outcome(error=exc)


def builtin_class(cls: type[BaseException]) -> type[BaseException]:
    """The class a caller of NumPy catches: NumPy's own exception classes (private
    subclasses of ``TypeError``, ``ValueError``, ...) count as their first built-in base;
    any other class (one a test defines) is itself."""
    module = cls.__module__
    if module.startswith("numpy.") and ".tests." not in module:
        return next(c for c in cls.__mro__ if c.__module__ == "builtins")
    return cls


# relative tolerance by the float's bits (complex: of its parts)
_RTOL = {16: 5e-3, 32: 1e-4}


def values_agree(mine: Any, theirs: Any) -> bool:
    """Same result kind (array or scalar), dtype, shape and value (exact for integers and
    bool, within a tolerance of the dtype's precision for floats, which einstride sums in a
    different order)."""
    if isinstance(mine, np.ndarray) != isinstance(theirs, np.ndarray):
        return False
    a, b = np.asarray(mine), np.asarray(theirs)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b))
    rtol = _RTOL.get(np.finfo(a.dtype).bits, 1e-11)
    scale = float(np.max(np.abs(b), initial=0.0, where=np.isfinite(b))) + 1.0
    return bool(np.allclose(a, b, rtol=rtol, atol=rtol * scale, equal_nan=True))


def _agree(function: str, mine: Outcome, theirs: Outcome) -> bool:
    if theirs.failed or mine.failed:
        return (
            theirs.error is not None
            and mine.error is not None
            and isinstance(mine.error, builtin_class(type(theirs.error)))
        )
    if function == "einsum_path":
        return list(mine.value[0]) == list(theirs.value[0])
    return values_agree(mine.value, theirs.value)


# -- explaining a disagreement ---------------------------------------------------------------


def _equation_facts(args: tuple[Any, ...]) -> tuple[list[str], str | None, list[int]]:
    """(input terms, output term or None, every sublist label) of a call's equation."""
    if args and isinstance(args[0], str):
        text = args[0].replace(" ", "")
        inputs, _, output = text.partition("->")
        return inputs.split(","), (output if "->" in text else None), []
    labels: list[int] = []
    subs = list(args[1::2])
    if len(args) % 2:
        subs.append(args[-1])
    for sub in subs:
        with contextlib.suppress(TypeError):
            labels += [v for v in sub if isinstance(v, int | np.integer)]
    out = args[-1] if len(args) % 2 and len(args) > 1 else None
    terms = [
        "".join(chr(0x100 + int(v)) for v in s if isinstance(v, int | np.integer)) for s in subs
    ]
    return terms, (terms[-1] if out is not None else None), labels


def _has_repeated_output(args: tuple[Any, ...]) -> bool:
    _, output, _ = _equation_facts(args)
    letters = [c for c in (output or "").replace("...", "") if c != "."]
    return len(letters) != len(set(letters))


def _operands(args: tuple[Any, ...]) -> list[Any]:
    if args and isinstance(args[0], str):
        return list(args[1:])
    return list(args[0::2][: len(args) // 2])


def _non_numeric(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    arrays = [*_operands(args), kwargs.get("out")]
    return any(isinstance(a, np.ndarray) and a.dtype.kind in "OSUmM" for a in arrays)


def classify(
    function: str, args: tuple[Any, ...], kwargs: dict[str, Any], mine: Outcome, theirs: Outcome
) -> Difference | None:
    """The documented difference that explains why einstride's outcome differs from NumPy's,
    or None when nothing does."""
    error, message = mine.error, str(mine.error)
    optimize = kwargs.get("optimize")
    if "order" in kwargs and isinstance(error, TypeError) and "order" in message:
        return Difference.PENDING_ORDER
    if "casting" in kwargs and isinstance(error, TypeError) and "casting" in message:
        return Difference.DEFAULT_CASTING
    if (
        isinstance(optimize, tuple | list)
        and optimize
        and isinstance(optimize[0], str)
        and (optimize[0] != "einsum_path")
    ):
        return Difference.PENDING_OPTIMIZE_TUPLE
    if isinstance(error, TypeError) and _non_numeric(args, kwargs):
        return Difference.OBJECT_DTYPE
    if isinstance(error, einstride.LayoutError) and "out" in kwargs and "overlaps" in message:
        return Difference.OUT_OVERLAP
    if isinstance(error, TypeError) and "out" in kwargs and "cannot hold" in message:
        return Difference.DEFAULT_CASTING  # NumPy's optimized path casts into out= unsafely
    if isinstance(error, einstride.EinsumError) and "never broadcast" in message:
        return Difference.STRICT_SIZES
    if theirs.failed and not mine.failed:
        if _has_repeated_output(args):
            return Difference.REPEATED_OUTPUT
        if any(int(v) >= 52 for v in _equation_facts(args)[2]):
            return Difference.SUBLIST_LABELS
        if kwargs.get("dtype") is not None:
            return Difference.DEFAULT_CASTING  # NumPy's default casting="safe" refused dtype=
    if theirs.failed and mine.failed:
        return Difference.PENDING_EXCEPTION_CLASS
    if not theirs.failed and not mine.failed:
        if function == "einsum_path":
            return Difference.PENDING_OPTIMIZE_FALSE if optimize is False else Difference.PATHS
        scalar_for_0d = isinstance(mine.value, np.generic) and isinstance(theirs.value, np.ndarray)
        if scalar_for_0d and values_agree(np.asarray(mine.value), theirs.value):
            return Difference.RANK0_SCALAR
    return None


# -- the ledger ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Disagreement:
    function: str
    call: str
    numpy: str
    einstride: str


@dataclass
class CallLedger:
    """Counts of the calls compared: agreeing, and disagreeing per documented difference;
    the unexplained disagreements are kept with their calls."""

    agreed: int = 0
    differences: collections.Counter[Difference] = field(default_factory=collections.Counter)
    unexplained: list[Disagreement] = field(default_factory=list)
    # the differences each test's calls hit (conftest.py names the running test)
    current_test: str = ""
    by_test: dict[str, set[Difference]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.agreed + sum(self.differences.values()) + len(self.unexplained)

    def record(
        self,
        function: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        mine: Outcome,
        theirs: Outcome,
    ) -> None:
        if _agree(function, mine, theirs):
            self.agreed += 1
            return
        kind = classify(function, args, kwargs, mine, theirs)
        if kind is not None:
            self.differences[kind] += 1
            self.by_test.setdefault(self.current_test, set()).add(kind)
            return
        self.unexplained.append(
            Disagreement(
                function=function,
                call=_describe(args, kwargs),
                numpy=_describe_outcome(theirs),
                einstride=_describe_outcome(mine),
            )
        )

    def summary(self) -> list[str]:
        lines = [f"{self.total} calls compared with NumPy: {self.agreed} agree"]
        lines += [
            f"  {count:6d}  {kind.name}: {kind.value}"
            for kind, count in sorted(self.differences.items(), key=lambda kv: kv[0].name)
        ]
        if self.unexplained:
            lines.append(f"  {len(self.unexplained):6d}  UNEXPLAINED, for example:")
            step = max(1, len(self.unexplained) // 25)  # a spread of at most 25 or so
            lines += [
                f"      {d.function}{d.call}\n        numpy:     {d.numpy}\n"
                f"        einstride: {d.einstride}"
                for d in self.unexplained[::step]
            ]
        return lines


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    def short(x: Any) -> str:
        if isinstance(x, np.ndarray):
            return f"array{x.shape}:{x.dtype}"
        return repr(x)[:60]

    items = [short(a) for a in args] + [f"{k}={short(v)}" for k, v in kwargs.items()]
    return f"({', '.join(items)})"


def _describe_outcome(outcome: Outcome) -> str:
    if outcome.error is not None:
        return f"{type(outcome.error).__name__}: {str(outcome.error)[:200]}"
    value = outcome.value
    if isinstance(value, np.ndarray | np.generic):
        return f"{type(value).__name__} {np.shape(value)} {value.dtype}: {str(value)[:80]}"
    return repr(value)[:120]


def _restorer(kwargs: dict[str, Any]) -> Callable[[], None]:
    """Undo what a call wrote into ``out=`` (and so into any operand sharing its memory)."""
    out = kwargs.get("out")
    if not isinstance(out, np.ndarray) or not out.flags.writeable:
        return lambda: None
    saved = out.copy()

    def restore() -> None:
        np.copyto(out, saved, casting="unsafe")

    return restore


def compared(
    name: str, theirs: Callable[..., Any], mine: Callable[..., Any], ledger: CallLedger
) -> Callable[..., Any]:
    """``theirs`` (NumPy's function, whose result or exception the caller gets, so the suite
    runs every call it makes) that first runs ``mine`` on the same arguments, undoes what it
    wrote into ``out=``, and records both outcomes in ``ledger``."""

    def call(*args: Any, **kwargs: Any) -> Any:
        restore = _restorer(kwargs)
        my_outcome = outcome_of(mine, args, kwargs)
        restore()
        try:
            result = theirs(*args, **kwargs)
        except Exception as exc:
            ledger.record(name, args, kwargs, my_outcome, Outcome(error=exc))
            raise
        ledger.record(name, args, kwargs, my_outcome, Outcome(value=_snapshot(result)))
        return result

    call.__name__ = name
    return call


# Every call NumPy's suite makes in this run (the counts printed at its end).
NUMPY_CALLS = CallLedger()
