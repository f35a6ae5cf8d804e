"""Text from runs, traces and models made safe for rich, markdown and UTF-8: the one escaping place; the markdown
table of escaped cells (:func:`md_table`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.markup import escape as _rich_markup_escape


def plain(text: object) -> str:
    """``str(text)`` with code points UTF-8 cannot encode (lone surrogates) as ``\\udxxx`` escapes."""
    text = str(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def rich_escape(text: object) -> str:
    """``text`` for rich: :func:`plain`, every ``[`` that could open a tag escaped (``rich.markup.escape``), and one
    more backslash before a ``[`` that opens none where backslashes precede it: rich's render drops one there (the
    tag pattern is ``rich.markup.RE_TAGS``'s)."""
    return re.sub(r"(\\+)\[(?![a-z#/@][^[]*?])", r"\1\\[", _rich_markup_escape(plain(text)))


def cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the last one an ellipsis when cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def md_escape(text: object, newline: str = "<br>") -> str:
    """``text`` for a markdown cell: :func:`plain`, ``&<>`` as entities, backslash, ``|``, newlines escaped."""
    text = plain(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", newline)


def md_table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """A GitHub-flavoured markdown table, each cell through :func:`md_escape`."""
    header = list(header)
    lines = ["| " + " | ".join(map(md_escape, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(md_escape, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"
