"""``einstride demo``: the tour runs and shows the spec's results and einsum."""

from __future__ import annotations

import subprocess
import sys

from einstride import cli, demo


def test_demo_tour_prints_the_core_results(capsys):
    assert demo.main([]) == 0
    text = capsys.readouterr().out
    assert "[1, 2, 4, 5, 5, 6]" in text  # the snapshot example's final storage
    assert "LayoutError" in text and "reverse" in text
    assert "(3,3):(1,3)+0" in text  # the transposed view's layout


def test_demo_shows_einsum(capsys):
    assert demo.main([]) == 0
    text = capsys.readouterr().out
    assert "[[5.0, 14.0], [14.0, 50.0]]" in text  # a @ a.T through the strided Tensor
    assert "[[1.0, 0.0], [0.0, 2.0]]" in text  # the diagonal expansion i->ii
    assert "one batched matmul" in text


def test_demo_arguments(capsys):
    assert demo.main(["--help"]) == 0
    assert "usage" in capsys.readouterr().out
    assert demo.main(["--bogus"]) == 2
    assert "unexpected" in capsys.readouterr().err


def test_the_cli_dispatches_to_the_demo(capsys):
    assert cli.main(["demo"]) == 0
    assert "snapshot" in capsys.readouterr().out


def test_the_console_command_runs():
    done = subprocess.run(
        [sys.executable, "-m", "einstride.cli", "demo"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "1. A tensor is a view" in done.stdout
