"""No docstring or comment in src cites a document the repository lacks, or an issue number: sources are
public (papers, vendor docs, URLs) or files in the repository (docs/design.md, docs/sources.md,
docs/benchmarks/*.md)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DANGLING = re.compile(r"(?i:issue \d+|course ch|seeds/|shared/)|DESIGN\.md|GPU\.md|STYLE\.md")
REPO_DOC = re.compile(r"docs/[\w./-]+\.md")


def test_no_citation_of_a_missing_document():
    hits = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in sorted((ROOT / "src").rglob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if DANGLING.search(line)
    ]
    assert hits == []


def test_every_cited_repository_document_exists():
    cited = {m for p in (ROOT / "src").rglob("*.py") for m in REPO_DOC.findall(p.read_text())}
    cited = {c for c in cited if "*" not in c}
    assert sorted(c for c in cited if not (ROOT / c).is_file()) == []
