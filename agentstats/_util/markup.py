"""Escaping of text from data or the command line that goes into Markdown or HTML (reports, summaries).

Agent names, task ids, tool names, file names, a skipped record's value and every other string the report did not
write itself are *data*: they must render as the characters they are, never as markup. A report is shared as one
HTML file, so a name such as ``<img src=x onerror=alert(1)>`` or ``[x](javascript:alert(1))`` that reached
Markdown or HTML unescaped would run in the browser of whoever opens it.

One rule, used wherever such a string is rendered:

* :func:`md_text` for text inside Markdown (titles, summaries, bullet points);
* :func:`md_code` for a value shown as inline code (file names, model names);
* :func:`html_text` for text inside HTML written by hand;
* :func:`plot_text` for matplotlib text (not a security matter: it keeps ``$`` from being read as TeX math).

pandas tables need no help: ``DataFrame._repr_html_`` and ``to_html`` escape cells, index and column names by
default (a ``Styler`` does not: pass ``escape="html"``).
"""

from __future__ import annotations

import html
import re
from typing import Any

__all__ = ["html_text", "md_code", "md_text", "one_line", "plot_text"]

# CommonMark lets every ASCII punctuation character be backslash-escaped; only the characters that can start Markdown
# syntax inside a line are: emphasis and strong (* _), code (`), links and images ([ ]), tables (|), strikethrough (~),
# TeX math in Jupyter ($) and the escape itself (\). & < > " ' are written as HTML character references instead, so
# no renderer can see a tag. Characters that matter only in one place are escaped there (_CONTEXT below), so plain
# names stay as they are ("davinci-002", "Claude 3.5 Sonnet (New)").
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~$])")
_CONTEXT = (
    re.compile(r"^([-+#=])"),  # at the start of a line: list item, heading, setext underline (">" is &gt;)
    re.compile(r"^(\d{1,9})([.)])"),  # ordered list item
    re.compile(r"(?i)(\bwww)(\.)"),  # extended autolink (GFM, mistune's url plugin)
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*)(:)(?=//)"),  # scheme://... autolink
    re.compile(r"(?i)(\b(?:mailto|xmpp))(:)"),
    re.compile(r"()(@)"),  # e-mail autolink
)
# Line breaks would start a new Markdown block (a heading, a list, a code fence); other control characters are noise.
_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
def one_line(value: Any) -> str:
    """``str(value)`` on one line: line breaks become one space, other control characters are dropped.

    Parameters
    ----------
    value : Any
        Anything; ``str()`` is applied.

    Returns
    -------
    str
    """
    return _CONTROL.sub("", _BREAKS.sub(" ", str(value)))


def md_text(value: Any) -> str:
    r"""Escape ``value`` so that it renders as literal text inside Markdown (and the HTML made from it).

    Markdown punctuation that could start syntax is backslash-escaped (no emphasis, link, image, code span, table
    cell, heading, list or autolink can start) and ``& < > " '`` become HTML character references (no tag or
    attribute); line breaks become spaces. Other characters are left alone, so ordinary names read the same in the
    Markdown source.
    CommonMark renderers (nbconvert's mistune, JupyterLab's marked) show the original characters.

    Parameters
    ----------
    value : Any
        Anything; ``str()`` is applied.

    Returns
    -------
    str
        Safe to interpolate anywhere in inline Markdown text (not inside a code span: use :func:`md_code`).

    Examples
    --------
    >>> print(md_text("[x](javascript:alert(1))"))
    \[x\](javascript:alert(1))
    >>> md_text("<b>")
    '&lt;b&gt;'
    """
    text = _MD_SPECIAL.sub(r"\\\1", one_line(value))
    for pattern in _CONTEXT:
        text = pattern.sub(lambda m: "".join(m.groups()[:-1]) + "\\" + m.groups()[-1], text)
    return html.escape(text, quote=True)


def md_code(value: Any) -> str:
    """Inline Markdown code span showing ``value`` literally, whatever backticks it contains.

    The fence is one backtick longer than the longest run of backticks in the value (CommonMark 6.1), padded with a
    space when the value starts or ends with a backtick. Code spans are rendered as text by every Markdown renderer,
    so no further escaping is needed inside.

    Parameters
    ----------
    value : Any
        Anything; ``str()`` is applied and line breaks become spaces.

    Returns
    -------
    str
    """
    text = one_line(value)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html_text(value: Any) -> str:
    """Escape ``value`` for HTML text or a quoted attribute value (``& < > " '``).

    Parameters
    ----------
    value : Any
        Anything; ``str()`` is applied.

    Returns
    -------
    str
    """
    return html.escape(str(value), quote=True)


def plot_text(value: Any) -> str:
    """``str(value)`` for matplotlib text: ``$`` escaped so that a name is never read as mathtext.

    matplotlib treats text between two ``$`` as TeX math (and raises on malformed math), so an agent called
    ``a$b$`` would render as math or break the figure. Labels from data go through this function.

    Parameters
    ----------
    value : Any
        Anything; ``str()`` is applied.

    Returns
    -------
    str
    """
    return str(value).replace("$", r"\$")
