"""Escaping of text from data or the command line that goes into Markdown or HTML (reports, summaries).

Agent names, task ids, tool names, file names, a skipped record's value and every other string the report did not
write itself are *data*: they must render as the characters they are, never as markup. A report is shared as one
HTML file, so a name such as ``<img src=x onerror=alert(1)>`` or ``[x](javascript:alert(1))`` that reached
Markdown or HTML unescaped would run in the browser of whoever opens it.

One rule, used wherever such a string is rendered:

* :func:`md_text` for text inside Markdown (titles, summaries, bullet points);
* :func:`md_code` for a value shown as inline code (file names, model names);
* :func:`html_text` for text inside HTML written by hand.

pandas tables need no help: ``DataFrame._repr_html_`` and ``to_html`` escape cells, index and column names by
default (a ``Styler`` does not: pass ``escape="html"``). matplotlib text needs no security escaping;
:func:`agentstats.plots.plot_text` only keeps ``$`` from being read as mathtext.
"""

from __future__ import annotations

import html
import re
from typing import Any

__all__ = ["html_text", "md_code", "md_text", "one_line"]

# CommonMark lets every ASCII punctuation character be backslash-escaped. These are the ones that start Markdown
# syntax (emphasis, links, images, code, headings, lists, tables, strikethrough) or TeX math in Jupyter ($);
# & < > " ' are written as HTML character references instead, so that no renderer can see a tag.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~$:])")
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

    Markdown punctuation is backslash-escaped (no emphasis, link, image, code span, heading or list can start) and
    ``& < > " '`` become HTML character references (no tag, attribute or autolink); line breaks become spaces.
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
    \[x\]\(javascript\:alert\(1\)\)
    >>> md_text("<b>")
    '&lt;b&gt;'
    """
    return html.escape(_MD_SPECIAL.sub(r"\\\1", one_line(value)), quote=True)


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
