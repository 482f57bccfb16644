"""AppTest: editing that does not fight the person: the grid shows the numbers in force, in one format, an error
belongs to the input that caused it (gone once it is valid, not on other pages, one at a time), and an empty paste
after Ctrl+Enter is no error."""

from __future__ import annotations

import re

from attention.ui.inputs.editors import editor_key
from tests.helpers.apptest import (
    edit_cell,
    errors,
    goto,
    journey,
    no_exception,
    paste,
    session,
)


def _editor(at, name: str):
    """The data editor drawn for ``name`` now."""
    key = editor_key(name, session(at))
    found = [e for e in at.dataframe if e.key == key]
    assert found, f"no editor {key}; have {[e.key for e in at.dataframe]}"
    return found[0]


def _pending(at, name: str) -> dict:
    """The edits the drawn grid would still show over its data (what the browser draws in its cells)."""
    key = editor_key(name, session(at))
    payload = at.session_state[key] if key in at.session_state else {}  # noqa: SIM401
    return (payload or {}).get("edited_rows") or {}


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def test_a_refused_value_does_not_stay_in_the_grid() -> None:
    at = journey("tokens", {"preset": "the_cat_sat"})
    kept = session(at).matrices["X"][0, 1]
    at = edit_cell(at, "X", 0, "d2", "abc")
    no_exception(at)
    assert session(at).matrices["X"][0, 1] == kept
    assert not _pending(at, "X"), "the grid still shows the refused text over the number in force"
    shown = _editor(at, "X").value.iloc[0, 1]
    assert float(shown) == round(kept, _decimals(shown))


def _significant(text: str) -> int:
    """How many significant digits a number's text shows ("0.07992" 4, "-5.000" 4, "0.000" 4)."""
    digits = str(text).lstrip("-").split("e")[0].replace(".", "")
    return len(digits.lstrip("0") or digits)


def test_an_edited_cell_is_written_like_its_neighbours_with_the_digits_the_control_says() -> None:
    """Every cell of a grid shows the digits control's significant digits (4 by default), before and after an edit
    that makes one number larger than the rest: "-5.000" beside "0.7992", not "-5" and not a format that jumps."""
    at = journey("weights", {"preset": "the_cat_sat"})
    before = _editor(at, "W_k").value
    assert {_significant(v) for v in before.to_numpy().ravel()} == {4}
    old = session(at).matrices["W_k"][1, 1]  # 0.79915856
    at = edit_cell(at, "W_k", 1, "k2", "-5")  # larger than every other number of W_k
    no_exception(at)
    assert session(at).matrices["W_k"][1, 1] == -5.0
    assert not _pending(at, "W_k")
    after = _editor(at, "W_k").value.to_numpy()
    assert after[1, 1] == "-5.000"
    assert {_significant(v) for v in after.ravel()} == {4}, "a cell lost or gained digits after an edit"
    note = " ".join(c.value for c in at.caption if "Changed W_k" in c.value)
    assert f"{old:.4f} → -5.000" in note, note  # the note in the grid's format, not "0.79915856 → -5"


def test_an_error_goes_once_its_cell_is_valid_even_with_the_value_it_kept() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    kept = session(at).matrices["W_q"][0, 0]
    at = edit_cell(at, "W_q", 0, "q1", "abc")
    assert any("not a number" in e for e in errors(at))
    at = edit_cell(at, "W_q", 0, "q1", repr(float(kept)))  # valid, and the same number: nothing changes
    no_exception(at)
    assert not errors(at), errors(at)


def test_an_error_stays_on_the_page_of_its_input() -> None:
    at = journey("tokens", {"preset": "the_cat_sat"})
    at = edit_cell(at, "X", 1, "d1", "abc")
    assert any("not a number" in e for e in errors(at))
    at = goto(at, "softmax")  # the X grid is drawn here too, beside the weights
    no_exception(at)
    assert not errors(at), errors(at)
    at = goto(at, "weights")
    assert not errors(at), errors(at)


def test_refusals_of_several_inputs_leave_one_error_not_a_pile() -> None:
    at = journey("tokens", {"preset": "the_cat_sat"})
    s = session(at)
    at = at.text_input(key=f"tok.sentence.{s.version}").set_value("   ").run()
    at = at.number_input(key=f"tok.dmodel.{s.version}").set_value(0).run()
    at = paste(at, "X", "[[1, 2], [3")
    at = edit_cell(at, "X", 0, "d1", "abc")
    no_exception(at)
    assert len(at.error) == 1, errors(at)
    assert "not a number" in errors(at)[0]  # the latest refusal


def test_an_error_in_a_narrow_column_is_short() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    at = edit_cell(at, "X", 0, "d1", "abc")
    (msg,) = errors(at)
    assert len(re.sub(r"\s+", " ", msg)) <= 90, msg


def test_apply_on_an_empty_box_after_ctrl_enter_applied_the_paste_is_no_error() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    at = paste(at, "W_q", "[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 1]]")  # Ctrl+Enter: the same callback
    no_exception(at)
    assert session(at).matrices["W_q"].tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 1]]
    assert at.text_area(key="imp.W_q.text").value == ""
    at = at.button(key="imp.W_q.apply").click().run()  # then Apply, the box now empty
    no_exception(at)
    assert not errors(at), errors(at)
    assert any("replaced" in m.value for m in at.success)  # what happened is still said


def test_apply_on_an_empty_box_says_what_to_do_without_a_red_box() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    for text in ("", "   \n  "):
        at = paste(at, "W_q", text)
        no_exception(at)
        assert not errors(at), errors(at)
        assert any("paste box is empty" in m.value for m in at.info)
