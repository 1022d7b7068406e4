"""The ``einstride`` command: ``demo`` and ``explain`` subcommands.

Each subcommand lives next to the code it shows; this module only dispatches, and turns
output failures into exit codes: a reader that closed the pipe (``einstride explain ... |
head -1``) ends the command quietly with 141, as a command killed by ``SIGPIPE``; any other
failure to write (a full disk) is one line on stderr and exit code 1.  A bad command line is
one line on stderr and exit code 2.
The benchmark is a development tool outside the wheel: ``make bench`` in a source checkout.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence

__all__ = ["EXIT_PIPE_CLOSED", "EXIT_USAGE", "EXIT_WRITE_FAILED", "main"]

EXIT_USAGE = 2
EXIT_WRITE_FAILED = 1
EXIT_PIPE_CLOSED = 128 + 13  # as a process killed by SIGPIPE

# subcommand -> (module, function taking argv and returning an exit code, one-line help)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("einstride.demo", "main", "a short tour of the strided core and einsum"),
    "explain": ("einstride.engine.cli", "explain_main", "print the plan of an einsum"),
}


def _load(name: str) -> Callable[[Sequence[str]], int]:
    module, func, _ = _COMMANDS[name]
    entry: Callable[[Sequence[str]], int] = getattr(importlib.import_module(module), func)
    return entry


def _usage() -> str:
    lines = ["usage: einstride COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<8} {help_}" for name, (_, _, help_) in sorted(_COMMANDS.items())]
    lines += ["", "Run 'einstride COMMAND --help' for the arguments of one command."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``einstride COMMAND ...``; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        return _guarded_output(lambda: _print_usage(0 if args else EXIT_USAGE), "--help")
    if args[0] not in _COMMANDS:
        print(
            f"einstride: unknown command {args[0]!r} (choose from "
            f"{', '.join(sorted(_COMMANDS))}; see einstride --help)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        entry = _load(args[0])
    except (ImportError, AttributeError) as exc:
        print(f"einstride {args[0]}: not available ({exc})", file=sys.stderr)
        return EXIT_USAGE
    return _guarded_output(lambda: entry(args[1:]), args[0])


def _print_usage(code: int) -> int:
    print(_usage())
    return code


def _guarded_output(run: Callable[[], int], command: str) -> int:
    """Run a subcommand (or print the usage) and flush its output, turning write failures
    into exit codes (a closed standard output, None, writes nothing: nothing to flush)."""
    try:
        code = run()
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE_CLOSED
    except OSError as exc:  # ENOSPC and friends, while writing the output
        _silence_stdout()
        print(f"einstride {command}: cannot write the output: {exc}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's own flush at exit, which would
    hit the same closed pipe or full disk, stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (captured in tests)
        pass


if __name__ == "__main__":
    raise SystemExit(main())
