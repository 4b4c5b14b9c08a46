"""The Python examples of the documentation's guides run, each guide as one script.

Every ``.. code-block:: python`` of ``docs/guides/<guide>.rst`` (and of the quickstart,
``docs/index.rst``) runs, in order, in one
namespace, in a temporary directory (the examples write files). A block marked
``:class: no-run`` is left out (it needs a GPU or the objects of an elided context).
Where a guide shows a value in a ``# comment`` after a ``print``, the test checks the
printed value too.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"^\.\. code-block:: python\n((?:   :.*\n)*)\n((?:(?:   .*)?\n)+)", re.M)
_SHOWN = re.compile(r"^print\((.*)\)\s+# (.+)$")


def blocks(path: Path) -> list[str]:
    """The runnable Python blocks of a guide, dedented."""
    return [
        textwrap.dedent(body)
        for options, body in _BLOCK.findall(path.read_text(encoding="utf-8"))
        if "no-run" not in options
    ]


def shown_values(source: str) -> list[tuple[str, str]]:
    """``(expression, shown value)`` for each ``print(expr)  # value`` line."""
    return [m.groups() for line in source.splitlines() if (m := _SHOWN.match(line.strip()))]


GUIDE_FILES = sorted(p for p in [DOCS / "index.rst", *DOCS.glob("guides/*.rst")] if blocks(p))


def test_the_guides_have_examples():
    assert {p.stem for p in GUIDE_FILES} >= {"index", "training", "checkpoints", "distributed"}


@pytest.mark.parametrize("path", GUIDE_FILES, ids=lambda p: p.stem)
def test_guide_examples_run(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    source = "\n".join(blocks(path))
    namespace: dict = {"__name__": "__guide__"}
    exec(compile(source, str(path), "exec"), namespace)
    printed = capsys.readouterr().out
    for expression, value in shown_values(source):
        if "..." not in value:  # values elided with '...' vary between runs
            assert value in printed, f"{path.name}: print({expression}) should show {value}"
