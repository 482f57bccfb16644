"""The one way user text is shown: escaped, so tokens, titles, file names and URL values are never Markdown or HTML.

Streamlit renders the text of ``st.markdown``, ``st.caption``, ``st.error`` and friends, and widget labels, as
Markdown (with its own extras: ``:red[...]`` colours, ``:material/...:`` icons, ``$...$`` maths, emoji
shortcodes). A token such as ``![x](http://host/p.png)`` would then make every visitor's browser fetch an
image. Every piece of user-supplied text goes through :func:`esc` (or :func:`md`, which escapes its
arguments) before it reaches one of those calls; ``tests/app/test_text_safety.py`` checks the source for
interpolations that bypass it.
"""

from __future__ import annotations

import re

# Every ASCII punctuation character may be backslash-escaped in CommonMark; these are the ones that start
# Markdown inside a line (emphasis, code, links and images (no "[", no link), tables, strike-through), Streamlit's
# directives
# (":red[...]", ":material/...:", emoji shortcodes), maths ("$") or HTML ("<", "&"). Line-start syntax
# ("# ", "- ", "1. ") cannot occur: line breaks in user text become spaces and user text never starts a message.
_SPECIAL = re.compile(r"([\\`*_{}\[\]#+|~<>&:$])")
_LIMIT = 300


def esc(value: object, limit: int = _LIMIT) -> str:
    """``value`` as literal text for any Streamlit call that renders Markdown: every special character is
    backslash-escaped, line breaks become spaces, and text longer than ``limit`` characters is cut with an
    ellipsis (so a 10,000-character token cannot flood a message)."""
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return _SPECIAL.sub(r"\\\1", text)


def md(template: str, *values: object, limit: int = _LIMIT) -> str:
    """A Markdown message whose ``{}`` slots are filled with escaped user text: ``md("Loaded **{}**.", title)``.

    The template is ours (it may use Markdown); only the values are the user's."""
    return template.format(*(esc(v, limit) for v in values))


def quoted(value: object, limit: int = 80) -> str:
    """User text in quotes for a message: “cat” (escaped)."""
    return f"“{esc(value, limit)}”"


def plural(n: int, word: str) -> str:
    """``n`` and ``word`` in the right number: "1 student", "2 students"."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
