"""Text from runs, traces and user models made safe for a renderer: the one place names are escaped.

A model name, an op name, a path or an error text is data, never markup. Rich reads ``[...]`` as markup
(``[/]`` closes a tag that was never opened and raises ``MarkupError``), markdown renders ``<img ...>`` as
HTML, and a lone UTF-16 surrogate (``"\\ud800"``, which JSON allows) cannot be encoded to UTF-8 at all
(``UnicodeEncodeError`` on print or write). Every renderer passes such text through these functions.
"""

from __future__ import annotations

from rich.markup import escape as _rich_markup_escape


def plain(text: object) -> str:
    """``str(text)`` with lone surrogates (and any other code point UTF-8 cannot encode) written as
    ``\\udxxx`` escapes, so it can be printed and written as UTF-8."""
    text = str(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def rich_escape(text: object) -> str:
    """``text`` for a rich string (table cell, title, ``console.print``): :func:`plain`, with every
    ``[`` that could open a markup tag escaped (``rich.markup.escape``), so it prints literally."""
    return _rich_markup_escape(plain(text))


def md_escape(text: object, newline: str = "<br>") -> str:
    """``text`` for a GitHub-flavoured markdown table cell or heading: :func:`plain`; ``&``, ``<`` and ``>``
    as HTML entities (markdown passes raw HTML through, so a name like ``<img onerror=...>`` would become a
    tag); backslashes and pipes escaped (a bare ``|`` would end the cell); each newline as ``newline`` (a
    raw one would end the row)."""
    text = plain(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", newline)
