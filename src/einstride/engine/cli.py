"""``einstride explain EQUATION SHAPE...``: print the plan report of an einsum.

Arguments are never mistaken for options: an equation such as ``->`` or ``->i`` and a shape
such as ``-2x3`` (which is then reported as a bad shape) are positional wherever they stand,
without ``--``.  Every user error is one line on stderr and exit code 2.

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
from typing import Any, NoReturn

from ..errors import EinsumError
from ..narrow import as_dtype
from .api import explain
from .spec.paths import OPTIMIZE_NAMES

__all__ = ["UsageError", "explain_main", "parse_optimize", "parse_shape", "split_options"]

PROG = "einstride explain"

# The options of ``einstride explain`` that take a value.
_VALUED = ("--dtype", "--optimize")


class UsageError(Exception):
    """A bad command line: the message is the one line printed before exiting with 2."""


def parse_shape(text: str) -> tuple[int, ...]:
    """``"8x64x32"`` -> ``(8, 64, 32)``; ``""``, ``"()"`` or ``"scalar"`` -> ``()``.

    >>> parse_shape("8x64x32"), parse_shape("7"), parse_shape("()")
    ((8, 64, 32), (7,), ())
    >>> parse_shape("-2x3")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: bad shape '-2x3': sizes cannot be negative
    """
    cleaned = text.strip().lower()
    if cleaned in ("", "()", "scalar"):
        return ()
    parts = cleaned.replace(",", "x").replace("*", "x").strip("()").split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad shape {text!r}: write sizes joined by 'x', like 8x64x32"
        ) from None
    if any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError(f"bad shape {text!r}: sizes cannot be negative")
    return dims


def parse_optimize(text: str) -> Any:
    """``--optimize``: a path finder's name, or a boolean spelled any usual way.

    >>> parse_optimize("True"), parse_optimize("no"), parse_optimize("greedy")
    (True, False, 'greedy')
    """
    word = text.strip().lower()
    if word in ("true", "yes", "on", "1"):
        return True
    if word in ("false", "no", "off", "0", "none"):
        return False
    return text.strip()


def split_options(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(options with their values, positionals).  Only ``-h``/``--help``, the valued options
    and words that look like options (``-x``, ``--name``) are options; everything else --
    ``->``, ``-2x3``, anything after ``--`` -- is positional.

    >>> split_options(["->", "--dtype", "float32", "-2x3", "--", "--x"])
    (['--dtype', 'float32'], ['->', '-2x3', '--x'])
    """
    options: list[str] = []
    positionals: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        if token == "--":
            positionals.extend(tokens)
        elif token in _VALUED:
            options.append(token)
            value = next(tokens, None)  # a missing value: argparse reports it
            if value is not None:
                options.append(value)
        elif _is_option(token):
            options.append(token)
        else:
            positionals.append(token)
    return options, positionals


def _is_option(token: str) -> bool:
    """``-h``, ``--dtype=...``, ``--bogus``: a dash and a letter.  ``->``, ``-2x3``, ``-``
    and ``-(2,3)`` are arguments."""
    return len(token) > 1 and token[0] == "-" and (token[1].isalpha() or token[1] == "-")


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are a :class:`UsageError` (one line), not usage + exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Print the plan einstride makes for an einsum: steps, views and copies "
        "(and why), FLOPs, bytes allocated and the largest intermediate.",
    )
    parser.add_argument("equation", help='the equation, e.g. "bij,bjk->bik"')
    parser.add_argument(
        "shapes",
        nargs="*",
        type=parse_shape,
        help="one shape per operand, e.g. 8x64x32 (use () for a scalar)",
    )
    parser.add_argument("--dtype", default="float64", help="operand dtype (default float64)")
    parser.add_argument(
        "--optimize",
        default="auto",
        type=parse_optimize,
        help=f"path finder: {', '.join(OPTIMIZE_NAMES)}, true or false",
    )
    return parser


def explain_main(argv: Sequence[str]) -> int:
    """Entry point of ``einstride explain``; returns the exit code (2 on bad input)."""
    parser = _parser()
    options, positionals = split_options(argv)
    try:
        args = parser.parse_args([*options, "--", *positionals])
        report = explain(
            args.equation, *args.shapes, dtype=as_dtype(args.dtype), optimize=args.optimize
        )
    except SystemExit as exc:  # --help printed the usage
        return 0 if exc.code in (0, None) else 2
    except (UsageError, EinsumError, TypeError, ValueError) as exc:
        print(f"{PROG}: {_one_line(exc)} (see {PROG} --help)", file=sys.stderr)
        return 2
    print(report)
    return 0


def _one_line(error: BaseException) -> str:
    """An error message on one line (a message of several lines is joined)."""
    return " ".join(str(error).split())
