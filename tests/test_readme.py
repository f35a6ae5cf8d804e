"""The README stays a short path from the first command to a decision; its reference lives in docs/, one page per
command, and every link between them resolves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
COMMANDS = ("run", "show", "compare", "report", "profile", "analyze", "diagnose", "perf", "optimize", "calibrate",
            "models", "scenarios", "serve")  # fmt: skip
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_starts_with_its_two_commands_and_stays_short():
    text = README.read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, re.S).group(1).splitlines()
    assert first_block[0].startswith("python3 -m venv .venv && ") and first_block[0].endswith("surrobench run")
    assert first_block[1] == ".venv/bin/python -m pytest -n 2"  # the CI machine's two cores (docs/libraries.md)
    assert first_block[1] in (ROOT / ".ci" / "run").read_text().splitlines()  # what CI runs
    assert len(text.splitlines()) < 150
    assert "## Faster than the solver?" in text and "`surrobench versus`" in text


def test_every_command_has_its_reference_page_and_every_link_resolves():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    linked = {(page.parent / target).resolve() for page in pages for target in LINK.findall(page.read_text())
              if not target.startswith(("http://", "https://"))}  # fmt: skip
    assert not [p for p in linked if not p.exists()]
    for command in COMMANDS:
        page = ROOT / "docs" / f"{'show' if command == 'history' else command}.md"
        assert page.is_file() and page.resolve() in linked, command
