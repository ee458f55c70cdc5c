"""Any name or message made safe for the output it goes to: one function per output.

A student's name is a file name from a folder anyone could have filled (bytes that are not
UTF-8, terminal escapes, a leading ``=``), and a message is whatever a submission raised (lone
surrogates, HTML, Markdown). Each output gets text it can hold and shows as text:

- :func:`text`: valid UTF-8 (an undecodable byte or a lone surrogate written as ``\\udcff``);
- :func:`line`: that, on one line, control and invisible format characters (escapes, bidi
  overrides) written as ``\\x1b``, ``\\u202e``: for terminals, names and file names;
- :func:`csv_cell`: a line that a spreadsheet will not run (OWASP's rule for CSV injection:
  a cell starting with ``= + - @``, a tab or a carriage return gets a leading ``'``);
- :func:`markdown`: a line whose HTML, links and table cells show as typed;
- :func:`html`: text escaped for HTML;
- :func:`tree`: every string of a JSON-like value (keys too) made :func:`text`.
"""

from __future__ import annotations

import html as _html
import re
import unicodedata
from typing import Any

#: OWASP: cells that start with these are read as formulas by spreadsheets.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: Characters with which text in a line of Markdown could make a link or image, or a table
#: cell, of its own, written with a backslash before them (and the backslash itself). ``<``
#: and ``&``, which start HTML tags and entities, become entities; a backtick (code) becomes
#: ``'``. Emphasis is left alone: it only changes how text looks, and escaping it would
#: litter every ``snake_case`` name with backslashes.
_MARKDOWN = re.compile(r"([\\\[\]|])")
_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?([eE][+-]?\d+)?")


def text(value: Any) -> str:
    """``value`` as a string that UTF-8 can encode: undecodable bytes of a file name (Python's
    surrogate escapes) and lone surrogates become ``\\udcXX``; nothing else changes."""
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def _visible(char: str) -> str:
    if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return char


def line(value: Any) -> str:
    """:func:`text` on one line, with every control or invisible format character (terminal
    escapes, newlines, bidi overrides, zero-width characters) written out as an escape."""
    return "".join(_visible(char) for char in text(value))


def csv_cell(value: Any) -> str:
    """A CSV cell that shows ``value`` and that no spreadsheet reads as a formula (a number,
    negative or not, stays a number)."""
    cell = line(value)
    if cell.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def csv_rows(rows: Any) -> list[list[str]]:
    """Rows of :func:`csv_cell` cells."""
    return [[csv_cell(cell) for cell in row] for row in rows]


def markdown(value: Any) -> str:
    """One line of Markdown prose that shows ``value``: no HTML, code, link, image or table
    cell of its own (a backtick is shown as ``'``)."""
    escaped = line(value).replace("&", "&amp;").replace("<", "&lt;").replace("`", "'")
    return _MARKDOWN.sub(r"\\\1", escaped)


def code_span(value: Any) -> str:
    """The inside of a Markdown code span (`...`) showing ``value`` on one line: a code span
    shows everything literally but a backtick, which would close it."""
    return line(value).replace("`", "'")


def html(value: Any) -> str:
    """``value`` escaped for HTML text or an attribute."""
    return _html.escape(text(value))


def tree(value: Any) -> Any:
    """A JSON-like value with every string in it (dictionary keys too) made :func:`text`."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {tree(k): tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [tree(v) for v in value]
    return value
