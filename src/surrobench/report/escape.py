"""Text from runs, traces and models made safe for a renderer, the one place names are escaped: never rich markup
(``[/]`` raises ``MarkupError``), never raw HTML in markdown, no lone surrogates (``UnicodeEncodeError``)."""

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
    """``text`` for a markdown table cell or heading: :func:`plain`, ``&<>`` as entities, backslash and ``|`` escaped,
    newlines as ``newline``."""
    text = plain(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", newline)
