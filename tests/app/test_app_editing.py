"""AppTest: editing that does not fight the person: the grid shows the numbers in force, in one format, an error
belongs to the input that caused it (gone once it is valid, not on other pages, one at a time), and an empty paste
after Ctrl+Enter is no error."""

from __future__ import annotations

import json
import re

import numpy as np
from streamlit.proto.WidgetStates_pb2 import WidgetState

from attention.ui.core import keys
from attention.ui.inputs.editors import editor_key
from tests.helpers.apptest import (
    conventions,
    edit_cell,
    errors,
    goto,
    grid_data,
    grid_edit,
    journey,
    make_trigger_id,
    no_exception,
    paste,
    session,
)


def _editor(at, name: str) -> dict:
    """The data the matrix editor for ``name`` is drawn with now (its cells as shown, its marks, its echo)."""
    return grid_data(at, editor_key(name, session(at)))


def _shown(at, name: str) -> np.ndarray:
    return np.array(_editor(at, name)["shown"], dtype=object)


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def test_a_refused_value_does_not_stay_in_the_grid() -> None:
    at = journey("tokens", {"preset": "the_cat_sat"})
    kept = session(at).matrices["X"][0, 1]
    at = edit_cell(at, "X", 0, "d2", "abc")
    no_exception(at)
    assert session(at).matrices["X"][0, 1] == kept
    shown = _shown(at, "X")[0, 1]  # the number in force, not the refused text
    assert float(shown) == round(kept, _decimals(shown))


def _significant(text: str) -> int:
    """How many significant digits a number's text shows ("0.07992" 4, "-5.000" 4, "0.000" 4)."""
    digits = str(text).lstrip("-").split("e")[0].replace(".", "")
    return len(digits.lstrip("0") or digits)


def test_an_edited_cell_is_written_like_its_neighbours_with_the_digits_the_control_says() -> None:
    """Every cell of a grid shows the digits control's significant digits (4 by default), before and after an edit
    that makes one number larger than the rest: "-5.000" beside "0.7992", not "-5" and not a format that jumps."""
    at = journey("weights", {"preset": "the_cat_sat"})
    before = _shown(at, "W_k")
    assert {_significant(v) for v in before.ravel()} == {4}
    old = session(at).matrices["W_k"][1, 1]  # 0.79915856
    at = edit_cell(at, "W_k", 1, "k2", "-5")  # larger than every other number of W_k
    no_exception(at)
    assert session(at).matrices["W_k"][1, 1] == -5.0
    after = _shown(at, "W_k")
    assert after[1, 1] == "-5.000"
    assert {_significant(v) for v in after.ravel()} == {4}, "a cell lost or gained digits after an edit"
    note = " ".join(c.value for c in at.caption if "Changed W_k" in c.value)
    assert f"{old:.4f} → -5.000" in note, note  # the note in the grid's format, not "0.79915856 → -5"
    assert [1, 1] in _editor(at, "W_k")["changed"] and len(_editor(at, "W_k")["changed"]) == 1


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


# ------------------------------------------------------------------------------------------ sent, echoed, never lost


def _send(at, name: str, seq: int, cells: dict, ver: str | None = None):
    """What the editor's page sends: its pending values of grid ``name`` with the last sequence number."""
    key = editor_key(name, session(at))
    payload = {"pid": "page-1", "seq": seq, "edited_rows": cells}
    if ver is not None:
        payload["ver"] = ver
    return grid_edit(at, key, payload)


def test_each_send_is_echoed_in_the_grids_data_so_the_page_stops_showing_it_as_pending() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    at = _send(at, "W_k", 3, {1: {"k2": "-5"}})
    no_exception(at)
    assert session(at).matrices["W_k"][1, 1] == -5.0
    assert _editor(at, "W_k")["echo"] == ["page-1", 3]
    assert _shown(at, "W_k")[1, 1] == "-5.000"


def test_a_later_send_carries_the_earlier_values_and_a_repeated_one_changes_nothing_again() -> None:
    """The page sends every value not yet echoed with each send (one dropped by coalesced reruns is carried by the
    next); a send taken already is not applied again, even over numbers changed since."""
    at = journey("weights", {"preset": "the_cat_sat"})
    at = _send(at, "W_k", 1, {1: {"k2": "-5"}})
    at = _send(at, "W_k", 2, {1: {"k2": "-5"}, 0: {"k1": "2.5"}})
    no_exception(at)
    m = session(at).matrices["W_k"]
    assert (m[1, 1], m[0, 0]) == (-5.0, 2.5)
    note = " ".join(c.value for c in at.caption if "Changed W_k" in c.value)
    assert "→ 2.500" in note and "-5" not in note, note  # the note names what changed now
    at = paste(at, "W_k", "1,2,3,4\n5,6,7,8\n9,10,11,12\n13,14,15,16")
    at = _send(at, "W_k", 2, {1: {"k2": "-5"}, 0: {"k1": "2.5"}})  # the send again (not echoed yet): taken already
    no_exception(at)
    assert session(at).matrices["W_k"][1, 1] == 6.0 and not errors(at), errors(at)
    assert _editor(at, "W_k")["echo"] == ["page-1", 2]


def test_an_edit_typed_over_numbers_since_replaced_is_refused_named_and_echoed() -> None:
    """The page sends which numbers it was typed over: after a paste (or another head, a preset) they are gone, so
    the edit is named, nothing applied, and its number echoed (the cell shows the numbers in force again)."""
    at = journey("weights", {"preset": "the_cat_sat"})
    drawn = _editor(at, "W_k")["ver"]
    at = paste(at, "W_k", "1,2,3,4\n5,6,7,8\n9,10,11,12\n13,14,15,16")
    assert _editor(at, "W_k")["ver"] != drawn
    at = _send(at, "W_k", 4, {1: {"k2": "-5"}}, ver=drawn)
    no_exception(at)
    assert session(at).matrices["W_k"][1, 1] == 6.0
    assert any("-5 in row 2, column k2 was typed over numbers no longer shown" in e for e in errors(at)), errors(at)
    assert _editor(at, "W_k")["echo"] == ["page-1", 4]


def test_a_bad_cell_keeps_its_value_and_is_named_while_the_others_land() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    kept = session(at).matrices["W_k"][0, 0]
    at = _send(at, "W_k", 1, {0: {"k1": "abc"}, 1: {"k2": "-5"}})
    no_exception(at)
    m = session(at).matrices["W_k"]
    assert (m[0, 0], m[1, 1]) == (kept, -5.0)
    assert any("W_k" in e and "not a number" in e for e in errors(at)), errors(at)
    assert _editor(at, "W_k")["echo"] == ["page-1", 1]


def test_a_grid_keeps_its_key_through_edits_digits_and_other_heads() -> None:
    """One key per matrix and window: the page's grid (and what is typed there) is never replaced by a rerun."""
    at = journey("weights", {"preset": "the_cat_sat"})
    key = editor_key("W_k", session(at))
    at = edit_cell(at, "W_k", 1, "k2", "-5")
    at = conventions(at)
    at = at.selectbox(key=keys.SB_DIGITS).set_value(8).run()
    no_exception(at)
    assert editor_key("W_k", session(at)) == key and session(at).matrices["W_k"][1, 1] == -5.0
    assert _shown(at, "W_k")[1, 1] == "-5.0000000"


def test_an_edit_of_a_matrix_gone_in_the_same_run_is_refused_not_a_crash() -> None:
    """Positions "learned" give a P grid; P edited and positions set to "none" in one run, in either order: no
    exception, P is gone, nothing else changed."""
    for edit_first in (True, False):
        at = journey("tokens", {"preset": "the_cat_sat"})
        at = at.selectbox(key=keys.TOK_POSITIONS).set_value("learned").run()
        key = editor_key("P", session(at))
        grid = [e for e in at.get("bidi_component") if e.proto.id.endswith(f"-{key}")][0]
        x = session(at).matrices["X"].copy()
        at.selectbox(key=keys.TOK_POSITIONS).set_value("none")
        states = at._tree.get_widget_states()
        payload = {"pid": "p", "seq": 1, "ver": json.loads(grid.proto.json)["ver"], "edited_rows": {0: {"d1": "7"}}}
        trigger = make_trigger_id(grid.proto.id, "events")
        edit = WidgetState(id=trigger, json_trigger_value=json.dumps([{"event": "edit", "value": payload}]))
        others = [w for w in states.widgets if w.id != trigger]
        del states.widgets[:]
        states.widgets.extend([edit, *others] if edit_first else [*others, edit])
        at = at._run(states)
        no_exception(at)
        assert "P" not in session(at).matrices and session(at).options.positions == "none"
        np.testing.assert_array_equal(session(at).matrices["X"], x)
