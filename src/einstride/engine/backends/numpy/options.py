"""The planner's options: the thread count, when a step is split over threads, and the cost
model's constants, as one frozen value that every plan is made for and that is part of
every plan-cache key (so changing them never needs the cache cleared).

The default options use ``min(2, os.cpu_count())`` threads unless the environment variable
``EINSTRIDE_NUM_THREADS`` says otherwise (read when the defaults are made: at import, and
again by ``set_num_threads(None)``); :func:`set_default_options` replaces them.

>>> options = PlannerOptions(threads=2)
>>> options.split_threads(64 << 20, 100), options.split_threads(1 << 10, 100)
(2, 1)
>>> options is PlannerOptions(threads=2)          # equal options are one object
True
>>> PlannerOptions(threads=0)
Traceback (most recent call last):
  ...
einstride.errors.EinsumError: PlannerOptions: threads must be a positive int, got 0
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ....errors import EinsumError
from ...forksafe import rlock

__all__ = [
    "DEFAULT",
    "MAX_THREADS",
    "OPTIONS_HOOKS",
    "PlannerOptions",
    "default_options",
    "set_default_options",
    "threads_from_env",
]

_ENV = "EINSTRIDE_NUM_THREADS"
MAX_THREADS = 256  # a bound on the thread count: a step's chunks are made per thread
_T = TypeVar("_T")
_INTERNED: dict[tuple[Any, ...], Any] = {}
_INTERN_LOCK = rlock()  # reentrant: a signal handler or finalizer may call einsum


class _Interned(type):
    """Equal values are one object: every construction (``dataclasses.replace`` included)
    hands back the first object made with those field values."""

    def __call__(cls: type[_T], *args: Any, **kwargs: Any) -> _T:
        made = super().__call__(*args, **kwargs)  # type: ignore[misc]
        key = (cls, *(getattr(made, f.name) for f in dataclasses.fields(made)))
        with _INTERN_LOCK:
            found: _T = _INTERNED.setdefault(key, made)
        return found


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannerOptions(metaclass=_Interned):
    """Everything besides the operands that a plan depends on.  Costs are estimated
    nanoseconds: only their relative sizes matter.

    Equal options are one object (interned), so they hash by identity: the options are part
    of every plan-cache key, and a value hash would cost the hot path a Python call.
    """

    threads: int = 1
    """Chunks a large memory-bound step may be split into (1: never split)."""
    split_min_bytes: int = 32 << 20
    """A step is split only when it moves at least this many bytes through memory.  Below,
    handing work to another thread costs more than it gains: waking it takes 30-150 us on
    a virtual machine, and two threads writing a fresh output contend on its page faults
    (measured on 2 cores: a 724x724 Hadamard product, 12 MiB moved, took 0.25-0.31 ms on
    one thread and 0.66-0.90 ms on two; a 16 MiB reduction gained nothing; a 64 MiB one
    ran 25% faster)."""
    matvec_min_columns: int = 256
    """A large column sum (its kept axes the operand's innermost dense run) is one BLAS
    ``ones @ matrix`` only from this many columns (kept elements) on: below, BLAS gains
    nothing on NumPy's loop (measured, float64 row-major: 128 columns 0.83-1.12x the
    loop's time, 256 columns 0.78-0.88x, 512 and more 0.45-0.76x)."""
    ones_max: int = 1 << 16
    """The longest vector of ones a large reduction may make to run as one BLAS
    matrix-vector product (its summed elements; 0: never, the memory-limited way's
    setting, which counts every byte)."""
    copy_ns_per_byte: float = 0.25
    """Copying an operand or a result (read + write)."""
    partial_ns_per_byte: float = 0.5
    """A partial result written, then read back by a reduce."""
    call_ns: float = 500.0
    """One more BLAS call in matmul's batch loop."""
    transposed_cost: float = 0.05
    """BLAS time added, as a share, per operand that has no unit stride along the
    contracted labels (a transposed matrix; OpenBLAS through NumPy: 0-10% measured)."""
    both_transposed_cost: float = 0.0
    """BLAS time added, as a share, when both operands are transposed and the row-major
    result has more rows than columns (NumPy's OpenBLAS: nothing more measured; torch's
    MKL: 1.5-3x slower there, and no slower for a result at least as wide as tall)."""
    wide_cost: float = 0.25
    """BLAS time added, as a share, when the row-major result has fewer rows than columns
    (OpenBLAS: 1.1-1.5x measured, (24 x 24) @ (24 x 13824) against its transpose); the
    planner then runs the product the other way round.  Torch's plans take their own
    values (:mod:`..torch.plan`: MKL measures otherwise)."""
    tall_cost: float = 0.0
    """BLAS time added, as a share, when the row-major result is tall and narrow: at least
    ``tall_ratio`` times as many rows as columns, and at most ``tall_max_cols`` columns
    (OpenBLAS: nothing; torch's MKL: 1.4-2.3x slower than the same product the other way
    round, e.g. (13824 x 64) @ (64 x 64) 7.3 ms against its transpose's 3.3 ms in float64,
    so torch's plans take 1)."""
    tall_ratio: int = 8
    """How many times as many rows as columns make a result tall (MKL: at 2x, both ways
    round measure alike)."""
    tall_max_cols: int = 128
    """The most columns a tall result may have for ``tall_cost`` to apply (MKL: from 256
    columns on, both ways round measure alike)."""
    into_ns: float = 0.0
    """The fixed cost of a last product written into the output the plan allocates (in the
    output's order) over returning the product's own buffer (NumPy: nothing, ``out=`` is
    one more argument of the same call; torch: 50-60 µs of views, checks and
    ``torch.empty`` measured warm, several times that after a large product, so torch's
    plans take 50,000)."""
    step_ns: float = 1500.0
    """The Python cost of one more step (fusing: one loop instead of several steps)."""
    flop_ns: float = 0.2
    """One planned multiply-add (fusing)."""
    byte_ns: float = 0.25
    """One planned byte allocated (fusing)."""
    loop_base_ns: float = 500.0
    """One call of NumPy's sum-of-products loop (fusing)."""
    loop_ns: float = 0.5
    """One index combination per operand in that loop (fusing; ``inf`` never fuses)."""
    loop_call_ns: float = 20.0
    """One step of that loop's general iterator (fusing and two-pass reductions:
    :mod:`.loopcalls`; fitted on 150 random loops of up to 2**20 index combinations, which
    the combinations alone priced 0.5-29x low) ..."""
    plain_call_ns: float = 3.0
    """... and one call of its inner kernel, made once per innermost run the operands'
    strides allow."""
    lane_max_combos: int = 1 << 18
    """A two-operand call of the matmul form on NumPy arrays runs in its equation's lane
    (one ``numpy.matmul`` over views, no plan-cache look: :mod:`.lanes`) up to this many
    index combinations (0: never; 0 also turns off the lane of a product that contracts
    nothing, whose size only the thread split bounds): there a product costs about what the
    look for its plan costs, and no layout decision pays (measured at 2**18, a 256 x 64 x 16
    product: lane vs planned 21 vs 21 us C-contiguous, 21 vs 26 transposed, 52 vs 60
    strided views, 37 vs 42 batched)."""
    fuse_max_combos: int = 1 << 20
    """Fusing is for tiny problems only: past this many index combinations the single loop is
    itself the hazard (a plan whose intermediates would exceed memory must fail fast, not
    run a loop over 10^12 combinations)."""

    __hash__ = object.__hash__  # equal options are the same object (see _Interned)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _check(f.name, getattr(self, f.name), f.type == "int")

    def __reduce__(self) -> tuple[Any, ...]:
        # copies and unpickled options are the interned object too
        return (_rebuild, (dataclasses.asdict(self),))

    def split_threads(self, bytes_moved: int, size: int) -> int:
        """How many chunks a step moving ``bytes_moved`` bytes, split along an axis of
        ``size``, runs as (1: not split)."""
        if bytes_moved < self.split_min_bytes or size < 2:
            return 1
        return min(self.threads, size)


def _check(name: str, value: object, integral: bool) -> None:
    if integral:
        low = 1 if name == "threads" else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise EinsumError(
                f"PlannerOptions: {name} must be a "
                f"{'positive' if low else 'non-negative'} int, got {value!r}"
            )
        if name == "threads" and value > MAX_THREADS:
            raise EinsumError(
                f"PlannerOptions: threads must be at most {MAX_THREADS}, got {value!r} (a "
                "memory-bound step gains nothing past the memory's channels)"
            )
    elif (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or math.isnan(value)
        or value < 0
    ):
        raise EinsumError(f"PlannerOptions: {name} must be a non-negative number, got {value!r}")


def _rebuild(fields: dict[str, Any]) -> PlannerOptions:
    return PlannerOptions(**fields)


def threads_from_env() -> int:
    """``EINSTRIDE_NUM_THREADS`` if it is a number (from 1 to :data:`MAX_THREADS`), else
    ``min(2, cpus)``."""
    text = os.environ.get(_ENV, "").strip()
    if text:
        try:
            return min(max(1, int(text)), MAX_THREADS)
        except ValueError:
            pass  # an unreadable setting means the default, not a failing einsum
    return max(1, min(2, os.cpu_count() or 1))


class _Default:
    """The options a call that names none is planned with: read as ``DEFAULT.options`` (one
    attribute read on the hot path), replaced by :func:`set_default_options`."""

    __slots__ = ("options",)

    def __init__(self) -> None:
        self.options = PlannerOptions(threads=threads_from_env())


DEFAULT = _Default()

OPTIONS_HOOKS: list[Callable[[], None]] = []
"""Called after the default options change (what was compiled with the old ones is
forgotten)."""


def default_options() -> PlannerOptions:
    """The options plans are made with when a call names none."""
    return DEFAULT.options


def set_default_options(options: PlannerOptions | None) -> PlannerOptions:
    """Plan with ``options`` from now on (``None``: the built-in defaults, with the thread
    count from the environment); returns the options in force before.  Cached plans stay
    cached: the options are part of their key.

    >>> before = set_default_options(PlannerOptions(threads=1, loop_ns=math.inf))
    >>> default_options().loop_ns
    inf
    >>> _ = set_default_options(before)
    """
    if options is not None and not isinstance(options, PlannerOptions):
        raise TypeError(
            f"set_default_options: expected PlannerOptions or None, got {type(options).__name__}"
        )
    before = DEFAULT.options
    DEFAULT.options = options if options is not None else PlannerOptions(threads=threads_from_env())
    for hook in OPTIONS_HOOKS:
        hook()
    return before
