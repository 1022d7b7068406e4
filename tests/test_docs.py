"""Run the runnable examples of every ``docs/*.md`` file (including ones added later).

A fenced code block runs when the word ``runnable`` follows the language in its opening fence,
as in ```` ```python runnable ````.  Blocks with ``>>>`` prompts are doctests (output compared; ``ELLIPSIS`` and
``NORMALIZE_WHITESPACE`` are on); other runnable blocks are executed as scripts and must not
raise.  All runnable blocks of one file share one namespace, in order, and run in a temporary
working directory.  Blocks without the marker (plain ``python``, shell, ...) are never run.
"""

from __future__ import annotations

import doctest
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
MARKER = "runnable"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
OPTIONAL = ("dask", "distributed", "torch")  # the einstride[dask] and [torch] extras


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the first line of code
    code: str


def runnable_blocks(text: str) -> list[Block]:
    """The runnable fenced blocks of a Markdown text, dedented to their fence."""
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        stripped = lines[index].lstrip()
        if not stripped.startswith(("```", "~~~")):
            index += 1
            continue
        indent = len(lines[index]) - len(stripped)
        fence = stripped[: len(stripped) - len(stripped.lstrip(stripped[0]))]
        info = stripped[len(fence) :].split()
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if MARKER in info[1:]:
            body = [_dedent(line, indent) for line in lines[index + 1 : end]]
            blocks.append(Block(index + 2, "\n".join(body) + "\n"))
        index = end + 1
    return blocks


def _dedent(line: str, indent: int) -> str:
    """Remove up to ``indent`` leading spaces (the fence's own indentation)."""
    return line[min(indent, len(line) - len(line.lstrip(" "))) :]


def run_blocks(blocks: list[Block], filename: str) -> None:
    """Run the blocks in one namespace; fail with every doctest report or the first error."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    parser = doctest.DocTestParser()
    for block in blocks:
        if ">>>" in block.code:
            test = parser.get_doctest(block.code, namespace, filename, filename, block.line - 1)
            runner = doctest.DocTestRunner(optionflags=FLAGS)
            report: list[str] = []
            runner.run(test, out=report.append, clear_globs=False)
            namespace.update(test.globs)  # DocTest works on a copy of the namespace
            if runner.failures:
                pytest.fail("".join(report), pytrace=False)
        else:
            exec(compile(block.code, f"{filename}:{block.line}", "exec"), namespace)


def _missing_extra(blocks: list[Block]) -> str | None:
    """An optional dependency (the ``einstride[dask]`` or ``[torch]`` extra) the blocks use
    but this environment lacks, if any."""
    code = "".join(block.code for block in blocks)
    for module in OPTIONAL:
        if re.search(rf"\b{module}\b", code) and importlib.util.find_spec(module) is None:
            return module
    return None


@pytest.mark.parametrize("path", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_runnable_examples_of_the_docs(path, tmp_path, monkeypatch):
    blocks = runnable_blocks(path.read_text(encoding="utf-8"))
    if not blocks:
        pytest.skip(f"{path.name} has no runnable blocks")
    missing = _missing_extra(blocks)
    if missing:
        pytest.skip(f"{path.name} needs {missing}, which is not installed")
    monkeypatch.chdir(tmp_path)
    run_blocks(blocks, str(path))


SAMPLE = """\
Text.

```python runnable
>>> def answer():
...     return 40
```

```python runnable
x = answer()
```

```python
raise SystemExit("never run: not marked")
```

- a list item:

  ```python runnable
  >>> x + 2
  42
  ```

```sh runnable-not
echo no
```
"""


def test_the_runner_picks_only_marked_blocks_and_checks_their_output():
    blocks = runnable_blocks(SAMPLE)
    assert [b.line for b in blocks] == [4, 9, 19]
    assert blocks[2].code.startswith(">>> x + 2")
    run_blocks(blocks, "sample.md")
    wrong = SAMPLE.replace("\n  42\n", "\n  41\n")
    with pytest.raises(pytest.fail.Exception, match="Expected"):
        run_blocks(runnable_blocks(wrong), "sample.md")
    failing = "```python runnable\nraise ValueError('boom')\n```\n"
    with pytest.raises(ValueError, match="boom"):
        run_blocks(runnable_blocks(failing), "sample.md")
