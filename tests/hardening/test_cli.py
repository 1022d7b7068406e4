"""The ``einstride`` command as a user's shell runs it (subprocesses, real exit codes): a closed
pipe ends it quietly with 141, a full disk is one line and exit code 1, a bad command line is
one line on stderr and exit code 2, and arguments that start with ``-`` (``->``, ``-2x3``) are
never mistaken for options.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from einstride import cli

COMMAND = [sys.executable, "-m", "einstride.cli"]


def run(*args: str, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60
    )


def test_a_good_call_prints_the_plan():
    done = run("explain", "ij,jk->ik", "2x3", "3x4")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("einsum 'ij,jk->ik'") and not done.stderr
    # the lane its own example takes (a review: the CLI always named a dtype, which hid it)
    lane = run("explain", "bij,bjk->bik", "8x64x32", "8x32x16")
    assert "lane: einsum runs this call without a plan" in lane.stdout


@pytest.mark.parametrize(
    "command", [["explain", "ij,jk->ik", "2x3", "3x4"], ["demo"], ["--help"], []]
)
def test_a_closed_pipe_ends_quietly(command):
    """``einstride ... | head -1`` when head has gone: no traceback, exit code 141."""
    proc = subprocess.Popen(
        [*COMMAND, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first write
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == cli.EXIT_PIPE_CLOSED
    assert "Traceback" not in err and "Error" not in err, err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    "command", [["explain", "ij,jk->ik", "2x3", "3x4"], ["demo"], ["--help"], []]
)
def test_a_full_disk_is_one_line_and_exit_code_1(command):
    with open("/dev/full", "w") as full:
        done = run(*command, stdout=full)
    assert done.returncode == cli.EXIT_WRITE_FAILED
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "No space left" in lines[0], done.stderr


def test_a_closed_standard_output_writes_nothing_and_no_traceback():
    """Run with stdout closed (``>&-``), Python's ``sys.stdout`` is None: the flush after the
    command raised AttributeError (a review)."""
    done = subprocess.run(
        [*COMMAND, "explain", "ij,jk->ik", "2x3", "3x4"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
        close_fds=True, preexec_fn=lambda: os.close(1),
    )  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("optimize", ["True", "true", "False", "no", "greedy", "optimal"])
def test_optimize_takes_booleans_and_names(optimize):
    done = run("explain", "ij,jk,kl->il", "2x3", "3x4", "4x5", "--optimize", optimize)
    assert done.returncode == 0, done.stderr


def test_arguments_that_start_with_a_dash_are_arguments():
    done = run("explain", "->", "()")  # an equation starting with '-', no '--' needed
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("einsum '->'")
    done = run("explain", "--dtype", "float32", "->i", "3")  # options before, too
    assert done.returncode == 2 and "appears in no input" in done.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["explain", "ij,jk->ik", "2x3", "-2x3"], "bad shape '-2x3'"),
        (["explain", "ij,jk->ik", "2x3", "5x4"], "has size 5"),
        (["explain", "ij", "2xq"], "bad shape '2xq'"),
        (["explain", "ij", "2x3", "--dtype", "nonsense"], "nonsense"),
        (["explain", "ij", "2x3", "--dtype"], "--dtype"),
        (["explain", "ij", "2x3", "--bogus"], "--bogus"),
        (["explain", "ij,jk,kl->il", "2x3", "3x4", "4x5", "--optimize", "bogus"], "bogus"),
        (["explain"], "required"),
        (["bogus"], "unknown command 'bogus'"),
        ([], "usage"),
    ],
)
def test_user_errors_are_one_line_and_exit_code_2(args, words):
    done = run(*args)
    assert done.returncode == cli.EXIT_USAGE, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    if args:
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], done.stderr
    else:  # no command at all: the usage, on stdout
        assert words in done.stdout


def test_help_exits_0():
    for args in (["--help"], ["explain", "--help"]):
        done = run(*args)
        assert done.returncode == 0 and "usage" in done.stdout.lower(), done.stderr


def test_a_very_long_equation_gives_a_short_message():
    done = run("explain", "ab" * 50000 + "->zz", "2x3")
    assert done.returncode == 2 and len(done.stderr) < 500, len(done.stderr)
