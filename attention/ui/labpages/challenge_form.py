"""A teacher's form for a new challenge, checked by the engine and shared as a link or a small JSON file."""

from __future__ import annotations

import json
import re
from typing import Any

import streamlit as st

from ...errors import AttentionError
from ...io.presets import list_presets, preset_label
from ...labs import challenges as ch
from ...names import ARRAYS, INPUTS
from .. import state
from ..core import session
from ..core.text import esc

EXAMPLE = {  # the form starts filled in with a challenge that reads, so a teacher sees what a result looks like
    "title": "Make 'cat' look at 'sat'",
    "preset": "the_cat_sat",
    "goal": "Make 'cat' give at least half of its attention to 'sat'. You may edit only W_q.",
    "kind": "cell",
    "array": "weights",
    "row": "cat",
    "col": "sat",
    "op": ">=",
    "value": 0.5,
    "editable": ["W_q"],
    "hint": "The score of 'cat' against 'sat' is the query of 'cat' dotted with the key of 'sat'.",
    "mask": "none",
}


def draw(s: session.Session) -> None:
    st.divider()
    st.header("Write a challenge")
    st.markdown(
        "Fill in the form and press **Check it**: the challenge is read back by the same checks as a file, and "
        "then you can share it as a link or a JSON file. A row or column is a 0-based index or a token that "
        "occurs once; a row may be `all` (every row must meet it) and a column `self` (the row's own token)."
    )
    with st.form("ch.form"):
        a, b = st.columns(2)
        title = a.text_input("Title", EXAMPLE["title"], max_chars=200, key="cf.title")
        presets = list_presets()
        preset = b.selectbox(
            "Preset", presets, index=presets.index(EXAMPLE["preset"]), format_func=preset_label, key="cf.preset"
        )
        goal = st.text_area("Goal (what the learner reads)", EXAMPLE["goal"], max_chars=2000, key="cf.goal")
        c1, c2, c3, c4, c5, c6 = st.columns([1.2, 1.2, 1, 1, 0.8, 1])
        kind = c1.selectbox(
            "Condition",
            ch.KINDS,
            key="cf.kind",
            help="cell: one number; argmax: the row's top; entropy: the row's spread in bits",
        )
        array = c2.selectbox("Array", ARRAYS, index=list(ARRAYS).index("weights"), key="cf.array")
        row = c3.text_input("Row", EXAMPLE["row"], key="cf.row")
        col = c4.text_input("Column", EXAMPLE["col"], key="cf.col", help="not used by an entropy")
        op = c5.selectbox("Is", list(ch.OPS), index=list(ch.OPS).index(">="), key="cf.op", help="not used by argmax")
        value = c6.number_input("Value", value=EXAMPLE["value"], format="%.4g", key="cf.value")
        d1, d2 = st.columns([2, 1])
        editable = d1.multiselect("Matrices the learner may edit", list(INPUTS), EXAMPLE["editable"], key="cf.edit")
        mask = d2.selectbox("Mask", ("none", "causal"), key="cf.mask")
        hint = st.text_area("Hint (shown on request)", EXAMPLE["hint"], max_chars=2000, key="cf.hint")
        st.form_submit_button("Check it", type="primary")
    data = _as_json(title, preset, goal, kind, array, row, col, op, value, editable, hint, mask)
    try:
        made = ch.parse_challenge(json.dumps(data), "your challenge")
        token = ch.encode_link(made)
    except AttentionError as exc:
        st.error(f"The challenge does not read yet: {esc(exc.message, 500)}")
        return
    st.success("It reads. The link below opens it on the Challenges page; the file can be opened there too.")
    st.code(_link(token), language=None, wrap_lines=True)
    x, y, _ = st.columns([1, 1, 2])
    x.download_button(
        "Download the challenge (.json)",
        ch.to_json(made),
        file_name=f"{made.id}.json",
        mime="application/json",
        on_click="ignore",
        key="cf.download",
    )
    y.button("Try it here", key="cf.try", on_click=state.start_challenge, args=(made,), icon=":material/flag:")


def _ref(text: str) -> int | str:
    """A row or column as typed: a whole number is an index, anything else a token or keyword."""
    text = text.strip()
    return int(text) if re.fullmatch(r"\d{1,6}", text) else text


def _as_json(
    title: str,
    preset: str,
    goal: str,
    kind: str,
    array: str,
    row: str,
    col: str,
    op: str,
    value: float,
    editable: list[str],
    hint: str,
    mask: str,
) -> dict[str, Any]:
    """The form's fields as challenge JSON (only the fields the condition type uses)."""
    condition: dict[str, Any] = {"type": kind, "row": _ref(row)}
    if kind != "entropy" or array != "weights":
        condition["array"] = array
    if kind != "entropy":
        condition["col"] = _ref(col)
    if kind != "argmax":
        condition |= {"op": op, "value": float(value)}
    cid = re.sub(r"[^A-Za-z0-9]+", "_", title).strip("_")[:60] or "my_challenge"
    out = {
        "format": ch.FORMAT,
        "id": cid,
        "title": title,
        "preset": preset,
        "goal": goal,
        "condition": condition,
        "editable": editable,
        "hint": hint,
    }
    if mask != "none":
        out["options"] = {"mask": mask}
    return out


def _link(token: str) -> str:
    """The full address of the Challenges page with the challenge in it (relative when the host is unknown)."""
    try:
        base = (st.context.url or "").split("?", 1)[0]
    except Exception:  # noqa: BLE001 - no request context (AppTest)
        base = ""
    base = base.rsplit("/", 1)[0] + "/challenges" if base else "challenges"
    return f"{base}?challenge={token}"
