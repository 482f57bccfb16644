"""The running challenge in the address, so a reload keeps it and a student's link hands it in.

Opened by anyone, the link shows the same challenge on the same numbers, and this server recomputes its goal from
them: nothing to sign, nothing to forge (a link whose numbers do not meet the goal, or that changes a matrix the
challenge locks, shows that instead).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import AttentionError
from ...labs import challenges as ch
from ...names import MAX_LINK_CHARS
from ..core import session
from ..core.text import quoted

PARAM = "playing"
LIMIT = MAX_LINK_CHARS


def params(s: session.Session) -> dict[str, str]:
    """The address's part for the running challenge (none when no challenge runs)."""
    return {PARAM: ch.encode_link(s.challenge)} if s.challenge is not None else {}


def restore(qp: Mapping[str, str], s: session.Session) -> list[str]:
    """Set the challenge the address runs on ``s`` (a session being built from the address); notices for a token
    that does not read (then no challenge runs and the numbers are shown as the address gives them)."""
    token = qp.get(PARAM)
    if not token:
        return []
    try:
        s.challenge = ch.decode_link(token)
    except AttentionError as exc:
        return [f"The link's running challenge could not be read ({quoted(exc.message, 200)}); showing its numbers."]
    return []
