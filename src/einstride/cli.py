"""The ``einstride`` command: ``demo`` and ``explain`` subcommands.

Each subcommand lives next to the code it shows; this module only dispatches. The benchmark
is a development tool outside the wheel: ``make bench`` in a source checkout.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

__all__ = ["main"]

# subcommand -> (module, function taking argv and returning an exit code, one-line help)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("einstride.demo", "main", "a short tour of the strided core and einsum"),
    "explain": ("einstride.engine.cli", "explain_main", "print the plan of an einsum"),
}


def _load(name: str) -> Callable[[Sequence[str]], int]:
    module, func, _ = _COMMANDS[name]
    entry: Callable[[Sequence[str]], int] = getattr(importlib.import_module(module), func)
    return entry


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``einstride COMMAND ...``; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="einstride", description=__doc__)
    parser.add_argument("command", choices=sorted(_COMMANDS), help="what to run")
    if not args or args[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if args else 2
    if args[0] not in _COMMANDS:
        parser.parse_args(args[:1])
    try:
        entry = _load(args[0])
    except (ImportError, AttributeError) as exc:
        print(f"einstride {args[0]}: not available ({exc})", file=sys.stderr)
        return 2
    return entry(args[1:])


if __name__ == "__main__":
    raise SystemExit(main())
