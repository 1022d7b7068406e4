"""``einstride explain EQUATION SHAPE...``: print the plan report of an einsum.

>>> explain_main(["ij,jk->ik", "2x3", "3x4"])   # doctest: +ELLIPSIS
einsum 'ij,jk->ik'  (labels: ij,jk->ik)
...
0
>>> explain_main(["ij,jk->ik", "2x3", "5x4"])   # the error goes to stderr
2
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from ..errors import EinsumError
from .api import explain
from .spec.paths import OPTIMIZE_NAMES

__all__ = ["explain_main", "parse_shape"]


def parse_shape(text: str) -> tuple[int, ...]:
    """``"8x64x32"`` -> ``(8, 64, 32)``; ``""``, ``"()"`` or ``"scalar"`` -> ``()``.

    >>> parse_shape("8x64x32"), parse_shape("7"), parse_shape("()")
    ((8, 64, 32), (7,), ())
    """
    cleaned = text.strip().lower()
    if cleaned in ("", "()", "scalar"):
        return ()
    parts = cleaned.replace(",", "x").replace("*", "x").strip("()").split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad shape {text!r}: write sizes joined by 'x', like 8x64x32") from None
    if any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError(f"bad shape {text!r}: sizes cannot be negative")
    return dims


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="einstride explain",
        description="Print the plan einstride makes for an einsum: steps, views and copies "
                    "(and why), FLOPs, bytes allocated and the largest intermediate.")
    parser.add_argument("equation", help='the equation, e.g. "bij,bjk->bik"')
    parser.add_argument("shapes", nargs="*", type=parse_shape,
                        help="one shape per operand, e.g. 8x64x32 (use () for a scalar)")
    parser.add_argument("--dtype", default="float64", help="operand dtype (default float64)")
    parser.add_argument("--optimize", default="auto",
                        help=f"path finder: {', '.join(OPTIMIZE_NAMES)} or false")
    return parser


def explain_main(argv: Sequence[str]) -> int:
    """Entry point of ``einstride explain``; returns the exit code (2 on bad input)."""
    parser = _parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse already printed the usage error
        return 0 if exc.code == 0 else 2
    optimize = False if args.optimize.lower() == "false" else args.optimize
    try:
        report = explain(args.equation, *args.shapes, dtype=np.dtype(args.dtype),
                         optimize=optimize)
    except (EinsumError, TypeError, ValueError) as exc:
        print(f"einstride explain: {exc}", file=sys.stderr)
        return 2
    print(report)
    return 0

