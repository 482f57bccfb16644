"""AppTest: editing that does not fight the person: the grid shows the numbers in force, in one format, an error
belongs to the input that caused it (gone once it is valid, not on other pages, one at a time), and an empty paste
after Ctrl+Enter is no error."""

from __future__ import annotations

import json
import re

import numpy as np
from streamlit.proto.WidgetStates_pb2 import WidgetState

import attention
from attention.ui.core import keys
from attention.ui.inputs.editors import editor_key
from tests.helpers.apptest import (
    conventions,
    edit_cell,
    errors,
    goto,
    grid_edit,
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
    # the grid that took the edit stays mounted (so an edit typed right after lands): it shows "-5" as typed over
    # the numbers it is given, and those are written in the grid's format
    assert _pending(at, "W_k") == {1: {"k2": "-5"}}
    after = _editor(at, "W_k").value.to_numpy()
    assert after[1, 1] == "-5.000"
    assert {_significant(v) for v in after.ravel()} == {4}, "a cell lost or gained digits after an edit"
    note = " ".join(c.value for c in at.caption if "Changed W_k" in c.value)
    assert f"{old:.4f} → -5.000" in note, note  # the note in the grid's format, not "0.79915856 → -5"
    at = goto(goto(at, "softmax"), "weights")  # drawn afresh: no typed text over the numbers, "-5.000" everywhere
    assert not _pending(at, "W_k")
    assert _editor(at, "W_k").value.to_numpy()[1, 1] == "-5.000"


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


# ------------------------------------------------------------------------------------------ a grid kept mounted


def test_a_grid_whose_edit_was_taken_keeps_its_key_so_an_edit_typed_right_after_lands() -> None:
    """A grid that sent an edit taken whole keeps its key: the browser keeps the same grid mounted, so an edit typed
    while the run is drawn goes to a grid that still exists (a new key mounts a new grid and that edit was lost). The
    browser then sends both edits, the first again: the matrix gets the second, and the note names only it."""
    at = journey("weights", {"preset": "the_cat_sat"})
    key = editor_key("W_k", session(at))
    at = edit_cell(at, "W_k", 1, "k2", "-5")
    assert editor_key("W_k", session(at)) == key
    both = {"edited_rows": {1: {"k2": "-5"}, 0: {"k1": "2.5"}}, "added_rows": [], "deleted_rows": []}
    at = grid_edit(at, key, both)  # what the mounted grid sends for its second edit
    no_exception(at)
    m = session(at).matrices["W_k"]
    assert (m[1, 1], m[0, 0]) == (-5.0, 2.5)
    note = " ".join(c.value for c in at.caption if "Changed W_k" in c.value)
    assert "→ 2.500" in note and "-5" not in note, note
    assert editor_key("W_k", session(at)) == key


def test_a_grid_is_renewed_when_its_matrix_changes_any_other_way_so_its_edits_are_not_applied_again() -> None:
    """The kept grid holds its edits over whatever numbers it is given. Once the matrix changes another way (a
    paste, a reset), it gets a fresh key: no edit is shown over the new numbers, and none is sent again."""
    at = journey("weights", {"preset": "the_cat_sat"})
    key = editor_key("W_k", session(at))
    at = edit_cell(at, "W_k", 1, "k2", "-5")
    at = paste(at, "W_k", "1,2,3,4\n5,6,7,8\n9,10,11,12\n13,14,15,16")
    no_exception(at)
    fresh = editor_key("W_k", session(at))
    assert fresh != key and not _pending(at, "W_k")
    assert session(at).matrices["W_k"][1, 1] == 6.0
    assert _editor(at, "W_k").value.to_numpy()[1, 1] == "6.000"
    at = edit_cell(at, "W_k", 0, "k1", "-1")  # the next edit changes its own cell and nothing else
    want = np.arange(1.0, 17.0).reshape(4, 4)
    want[0, 0] = -1
    np.testing.assert_array_equal(session(at).matrices["W_k"], want)
    at = at.button(key="sb.reset").click().run()  # a reset: the numbers change again, so does the key
    assert editor_key("W_k", session(at)) not in (key, fresh) and not _pending(at, "W_k")
    np.testing.assert_array_equal(session(at).matrices["W_k"], attention.load_preset("the_cat_sat").matrices()["W_k"])


def test_a_refused_cell_renews_the_grid_even_after_a_kept_edit() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    at = edit_cell(at, "W_k", 1, "k2", "-5")
    kept = editor_key("W_k", session(at))
    at = edit_cell(at, "W_k", 0, "k1", "abc")
    assert editor_key("W_k", session(at)) != kept and not _pending(at, "W_k")
    assert session(at).matrices["W_k"][1, 1] == -5.0


def test_a_kept_grid_is_renewed_when_its_matrix_changes_even_by_a_route_that_renews_nothing() -> None:
    """The grid's key follows the numbers themselves: a matrix written without any renewal (as a careless new route
    would) still gets a grid that never held the kept edit."""
    at = journey("weights", {"preset": "the_cat_sat"})
    at = edit_cell(at, "W_k", 1, "k2", "-5")
    kept = editor_key("W_k", session(at))
    session(at).matrices["W_k"] = np.full((4, 4), 0.25)  # no version, no grids moved
    at = at.run()
    no_exception(at)
    fresh = editor_key("W_k", session(at))
    assert fresh != kept and keys.same_window(fresh, kept) and not _pending(at, "W_k")
    assert _editor(at, "W_k").value.to_numpy()[1, 1] == "0.2500"
    assert editor_key("W_k", session(at.run())) == fresh  # the same key while the numbers stay: no churn


def test_digits_changed_after_a_kept_edit_keep_the_grid_and_its_numbers() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    at = edit_cell(at, "W_k", 1, "k2", "-5")
    kept = editor_key("W_k", session(at))
    at = conventions(at)
    at = at.selectbox(key=keys.SB_DIGITS).set_value(8).run()
    no_exception(at)
    assert editor_key("W_k", session(at)) == kept and session(at).matrices["W_k"][1, 1] == -5.0


def test_an_edit_of_a_matrix_gone_in_the_same_run_is_refused_not_a_crash() -> None:
    """Positions "learned" give a P grid; P edited and positions set to "none" in one run, in either order: no
    exception, P is gone, nothing else changed."""
    for edit_first in (True, False):
        at = journey("tokens", {"preset": "the_cat_sat"})
        at = at.selectbox(key=keys.TOK_POSITIONS).set_value("learned").run()
        key = editor_key("P", session(at))
        grid = [e for e in at.dataframe if e.key == key][0]
        x = session(at).matrices["X"].copy()
        at.selectbox(key=keys.TOK_POSITIONS).set_value("none")
        states = at._tree.get_widget_states()
        payload = {"edited_rows": {0: {"d1": "7"}}, "added_rows": [], "deleted_rows": []}
        edit = WidgetState(id=grid.proto.id, string_value=json.dumps(payload))
        others = [w for w in states.widgets if w.id != grid.proto.id]
        del states.widgets[:]
        states.widgets.extend([edit, *others] if edit_first else [*others, edit])
        at = at._run(states)
        no_exception(at)
        assert "P" not in session(at).matrices and session(at).options.positions == "none"
        np.testing.assert_array_equal(session(at).matrices["X"], x)
