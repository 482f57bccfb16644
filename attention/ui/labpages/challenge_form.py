"""A teacher's form for a new challenge, checked by the engine and shared as a link or a small JSON file."""

from __future__ import annotations

import json
import re
from typing import Any

import streamlit as st

from ...errors import AttentionError
from ...io.presets import list_presets, load_preset, preset_label
from ...labs import challenges as ch
from ...labs.solutions import Audit, audit
from ...names import ARRAYS, INPUTS
from ..core import keys, session
from ..core.cache import kept
from ..core.text import esc
from ..state import challenges as state_challenges
from ..widgets import common as widgets

EXAMPLES = {  # the form starts filled in with a challenge that reads, one per condition type (see example_preset)
    "cell": {
        "title": "Make 'cat' look at 'sat'",
        "goal": "Make 'cat' give at least half of its attention to 'sat'. You may edit only W_q.",
        "row": "cat",
        "col": "sat",
        "op": ">=",
        "value": 0.5,
        "hint": "The score of 'cat' against 'sat' is the query of 'cat' dotted with the key of 'sat'.",
    },
    "argmax": {
        "title": "Make 'cat' attend most to 'sat'",
        "goal": "'cat' attends most to itself. Make it attend most to 'sat'. You may edit only W_q.",
        "row": "cat",
        "col": "sat",
        "op": ">=",
        "value": 0.5,
        "hint": "A row attends most to the key its query points along most: point the query of 'cat' (its row of X "
        "times W_q) more along the key of 'sat' than along its own key.",
    },
    "entropy": {
        "title": "Make 'cat' sure of itself",
        "goal": "Bring the entropy of the row of 'cat' down to 0.5 bits or less. You may edit only W_q.",
        "row": "cat",
        "col": "sat",
        "op": "<=",
        "value": 0.5,
        "hint": "Softmax cares about differences between scores: multiplying every number of W_q by the same factor "
        "multiplies every difference too.",
    },
}
EXAMPLE = EXAMPLES["cell"] | {"kind": "cell", "array": "weights", "editable": ["W_q"]}
KIND_NAMES = {"cell": "one number (cell)", "argmax": "the row's top (argmax)", "entropy": "the row's spread (entropy)"}
USED = {  # the condition fields each type uses: only these are shown
    "cell": ("array", "row", "col", "op", "value"),
    "argmax": ("array", "row", "col"),
    "entropy": ("row", "op", "value"),
}
LABELS = {  # a field of the file format -> the form's label for it
    "id": "Title",
    "title": "Title",
    "preset": "Preset",
    "goal": "Goal",
    "condition.type": "Condition",
    "condition.array": "Array",
    "condition.row": "Row",
    "condition.col": "Column",
    "condition.op": "Is",
    "condition.value": "Value",
    "condition.head": "Preset",
    "editable": "Matrices the learner may edit",
    "hint": "Hint",
    "options": "Mask",
    "options.mask": "Mask",
}
_KEYS = {
    "title": keys.CF_TITLE,
    "goal": keys.CF_GOAL,
    "row": keys.CF_ROW,
    "col": keys.CF_COL,
    "op": keys.CF_OP,
    "value": keys.CF_VALUE,
}
_KEYS |= {"hint": keys.CF_HINT}
EXAMPLE_HINTS = {e["hint"] for e in EXAMPLES.values()}
EXAMPLE_GOALS = {e["goal"] for e in EXAMPLES.values()}


@kept(1)
def example_preset() -> str:
    """The preset the examples are set on: the first in the sidebar's order whose tokens hold every word the examples
    name as a row or column (only there do they read)."""
    words = {e[field] for e in EXAMPLES.values() for field in ("row", "col")}
    return next(p for p in list_presets() if words <= set(load_preset(p).tokens))


def _init() -> None:
    """The form's fields, filled in with the cell example the first time. Streamlit drops a widget's value when the
    widget is not drawn (another page, or a field the condition does not use), so each value is also kept under a
    key of its own and brought back from there."""
    defaults = {
        keys.CF_KIND: EXAMPLE["kind"],
        keys.CF_PRESET: example_preset(),
        keys.CF_ARRAY: EXAMPLE["array"],
        keys.CF_EDIT: list(EXAMPLE["editable"]),
        keys.CF_MASK: "none",
    } | {key: EXAMPLE[name] for name, key in _KEYS.items()}
    for key, value in defaults.items():
        widgets.bind(key, st.session_state.get(f"{key}.kept", value), once=True)
        widgets.bind(f"{key}.kept", st.session_state[key])


def _on_kind() -> None:
    """Another condition type: every field still holding the old type's example takes the new type's example; a hint
    that is an example's while the goal is the teacher's own is cleared (it was about the example's goal)."""
    old, new = session.get().form_kind, st.session_state[keys.CF_KIND]
    state_challenges.set_form(kind=new)
    if old in EXAMPLES and new in EXAMPLES:
        for name, key in _KEYS.items():
            if st.session_state.get(key) == EXAMPLES[old][name]:
                widgets.bind(key, EXAMPLES[new][name])
    _clear_stale_hint()


def _clear_stale_hint() -> None:
    hint, goal = st.session_state.get(keys.CF_HINT), st.session_state.get(keys.CF_GOAL)
    stale = hint in EXAMPLE_HINTS and goal not in EXAMPLE_GOALS
    if stale:
        widgets.bind(keys.CF_HINT, "")
    state_challenges.set_form(hint_cleared=stale)


def draw(s: session.Session) -> None:
    """The form, filled in with an example the first time; what it makes is checked on every press of *Check it*."""
    st.divider()
    st.header("Write a challenge")
    st.markdown(
        "Fill in the form and press **Check it**: the challenge is read back by the same checks as a file, and "
        "then you can share it as a link or a JSON file. A row or column is a 0-based index or a token that "
        "occurs once; a row may be `all` (every row must meet it) and a column `self` (the row's own token)."
    )
    _init()
    kind = st.selectbox(
        "Condition",
        ch.KINDS,
        format_func=KIND_NAMES.get,
        key=keys.CF_KIND,
        on_change=_on_kind,
        help="Changing it shows only the fields it uses (and the matching example while you have not written yours).",
    )
    used = USED[kind]
    with st.form(keys.CH_FORM):
        a, b = st.columns(2)
        title = a.text_input("Title", max_chars=200, key=keys.CF_TITLE)
        presets = list_presets()
        preset = b.selectbox("Preset", presets, format_func=preset_label, key=keys.CF_PRESET)
        goal = st.text_area("Goal (what the learner reads)", max_chars=2000, key=keys.CF_GOAL)
        cols = iter(st.columns([1.2, 1, 1, 0.8, 1][: len(used)]))
        got = {name: st.session_state[key] for name, key in _KEYS.items() if name in ("row", "col", "op", "value")}
        got["array"] = st.session_state[keys.CF_ARRAY] if "array" in used else "weights"
        if "array" in used:
            got["array"] = next(cols).selectbox("Array", ARRAYS, key=keys.CF_ARRAY)
        got["row"] = next(cols).text_input("Row", key=keys.CF_ROW)
        if "col" in used:
            got["col"] = next(cols).text_input("Column", key=keys.CF_COL)
        if "op" in used:
            got["op"] = next(cols).selectbox("Is", list(ch.OPS), key=keys.CF_OP)
            got["value"] = next(cols).number_input("Value", format="%.4g", key=keys.CF_VALUE)
        d1, d2 = st.columns([2, 1])
        editable = d1.multiselect("Matrices the learner may edit", list(INPUTS), key=keys.CF_EDIT)
        mask = d2.selectbox("Mask", ("none", "causal"), key=keys.CF_MASK)
        hint = st.text_area("Hint (shown on request)", max_chars=2000, key=keys.CF_HINT)
        st.form_submit_button("Check it", type="primary", on_click=_clear_stale_hint)
    if s.form_hint_cleared:
        st.info(
            "The example's hint was taken out: it was about the example's goal. Write a hint for yours, or leave "
            "it empty.",
            icon=":material/lightbulb:",
        )
        hint = ""
    data = _as_json(
        title, preset, goal, kind, got["array"], got["row"], got["col"], got["op"], got["value"], editable, hint, mask
    )
    checked(data)


def checked(data: dict[str, Any]) -> None:
    """The form's challenge read back by the same checks as a file and audited; once it reads and can be shared, its
    link, its file and a button to try it here."""
    try:
        made = ch.parse_challenge(json.dumps(data), "your challenge")
        token = ch.encode_link(made)
    except AttentionError as exc:
        st.error(f"The challenge does not read yet: {esc(form_message(exc), 500)}")
        return
    verdict = _audit(token)
    if verdict.verdict in ("met", "impossible", "unsolvable"):
        st.error(f"The challenge reads, but {WHAT[verdict.verdict]}: {verdict.reason}. Change it before sharing.")
        return
    if verdict.verdict == "unknown":
        st.warning(f"It reads, but no solution was found: {verdict.reason}.")
    else:
        st.success(
            f"It reads, and it can be solved ({verdict.reason}). The link below opens it on the Challenges page; "
            "the file can be opened there too."
        )
    st.code(_link(token), language=None, wrap_lines=True)
    row = st.container(horizontal=True)  # each button as wide as its label: none is cut at 1280 px
    row.download_button(
        "Download the challenge (.json)",
        ch.to_json(made),
        file_name=f"{made.id}.json",
        mime="application/json",
        on_click="ignore",
        key=keys.CF_DOWNLOAD,
    )
    row.button(
        "Try it here", key=keys.CF_TRY, on_click=state_challenges.start_challenge, args=(made,), icon=":material/flag:"
    )


WHAT = {"met": "it is already met", "impossible": "it is impossible", "unsolvable": "it cannot be solved"}


@kept(64)  # the solver may take a second
def _audit(token: str) -> Audit:
    """The challenge a link token carries, checked before sharing (cached: the solver may take a second)."""
    return audit(ch.decode_link(token))


def form_message(exc: AttentionError) -> str:
    """An error of the challenge's checks in the form's words: the field's label for the file format's field name
    (``field 'editable' must be a non-empty list`` -> ``choose at least one matrix the learner may edit``)."""
    where = exc.field or ""
    rest = exc.message.split(f"field '{where}' ", 1)[1] if where and f"field '{where}' " in exc.message else None
    if rest is None:
        return exc.message.removeprefix("your challenge: ")
    if where == "editable" and rest.startswith("must be a non-empty list"):
        return f"choose at least one of the matrices the learner may edit ({', '.join(INPUTS)})"
    base = where.split("[", 1)[0]
    label = LABELS.get(base) or LABELS.get(base.rsplit(".", 1)[0], base)
    if base == "options":
        rest = rest.removeprefix("does not work with preset ").split(": ", 1)[-1]
    return f"{label} {rest}" if rest.split(" ", 1)[0] in ("is", "must", "names") else f"{label}: {rest}"


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
