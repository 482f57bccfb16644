"""A model's head opened on the step pages (issue 23 §2, §3, §7): its numbers, edits that flow back into the model,
ablating it from its page, and the address that restores it; every number against the engine run directly."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attention.model import ablate, builtin, replace_matrix, roles
from attention.ui.core import compute
from attention.ui.inputs.editors import editor_key
from tests.helpers.apptest import (
    app,
    choose_tab,
    edit_cell,
    errors,
    goto,
    grid_edit,
    grid_numbers,
    head_button,
    journey,
    matrix_grids,
    no_exception,
    open_views,
    session,
    texts,
)

ENGINE = builtin("induction")  # a model of its own, not the page's: the oracle runs the engine directly
D = ENGINE.config.d_head


def _query(at) -> dict[str, str]:
    return {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}


def _metric(at, start: str) -> str:
    found = [m.value for m in at.metric if m.label.startswith(start)]
    assert found, [m.label for m in at.metric]
    return found[0]


def _losses(ids: tuple[int, ...], ivs: list) -> tuple[float, float]:
    run = ENGINE.run(list(ids), ivs)
    losses = roles.position_losses(run.logits, ids)
    return roles.half_losses(losses, len(ids) // 2)


def _opened(layer: int = 1, head: int = 0, page: str = "scores"):
    at = journey("every_head")
    at = head_button(at, "open", layer, head).click().run()
    no_exception(at)
    assert any(t.startswith("The step pages now show") for t in texts(at.success))
    return goto(at, page)


def test_a_head_opens_as_the_layer_input_and_the_heads_blocks() -> None:
    at = _opened(1, 0)
    no_exception(at)
    s = session(at)
    ids = s.model_head.ids
    run = ENGINE.run(list(ids))
    W_q, W_k, W_v, _ = ENGINE.layer_weights(1)
    np.testing.assert_array_equal(s.matrices["X"], run.residuals[1])  # attention-only: the layer reads the stream
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        np.testing.assert_array_equal(s.matrices[name], W[:, :D])  # head 1: the first d_head columns
    trace = compute.current_trace(s)
    np.testing.assert_allclose(trace.weights, run.weights[1, 0], atol=1e-12)  # the page's trace is the model's head
    assert s.tokens == tuple(ENGINE.pieces(list(ids)))
    assert session(at).preset_id == "model" and _query(at)["preset"] == "model"
    first, second = _losses(ids, [])
    assert _metric(at, "Loss on the repeated half") == f"{second:.2f} nats"
    assert _metric(at, "Loss on the first half") == f"{first:.2f} nats"


def test_an_edit_of_w_k_flows_into_the_model_and_the_address_restores_it() -> None:
    at = _opened(1, 0, "qkv")
    ids = session(at).model_head.ids
    at = edit_cell(at, "W_k", 0, "k1", 40.0)
    no_exception(at)
    s = session(at)
    edited = s.matrices["W_k"]
    assert edited[0, 0] == 40.0
    _, second = _losses(ids, [replace_matrix(1, 0, "W_k", edited)])
    _, unedited = _losses(ids, [])
    assert abs(second - unedited) > 0.01, "the edit should move the loss for this test to mean anything"
    assert _metric(at, "Loss on the repeated half") == f"{second:.2f} nats"
    said = [t for t in texts(at.info) if t.startswith("With your edits")]
    assert said and f"from {unedited:.2f} to {second:.2f}" in said[0], said
    query = _query(at)
    assert "edits" in query and query["mh"].startswith("induction~2.1~")
    again = app("qkv", query)  # a reload, or the link opened elsewhere
    no_exception(again)
    s2 = session(again)
    assert s2.model_head == s.model_head
    np.testing.assert_array_equal(s2.matrices["W_k"], edited)
    assert _metric(again, "Loss on the repeated half") == f"{second:.2f} nats"


def test_an_edit_of_x_stays_on_the_page_and_says_so() -> None:
    at = _opened(1, 0, "qkv")
    at = edit_cell(at, "X", 0, "d1", 9.0)
    no_exception(at)
    captions = [t for t in texts(at.caption) if t.startswith("Changed here but not in the model")]
    assert captions and "X" in captions[0]
    _, unedited = _losses(session(at).model_head.ids, [])
    assert _metric(at, "Loss on the repeated half") == f"{unedited:.2f} nats"


@pytest.mark.parametrize("how", ["zero", "mean"])
def test_ablating_the_head_from_its_page_and_restoring_it(how: str) -> None:
    at = _opened(1, 0)
    ids = session(at).model_head.ids
    at = at.button(key=f"model_head.{how}").click().run()
    no_exception(at)
    _, second = _losses(ids, [ablate(1, 0, how)])
    assert _metric(at, "Loss on the repeated half") == f"{second:.2f} nats"
    assert session(at).model_head.ablations == ((1, 0, how),)
    assert _query(at)["mh"].endswith(f"~2.1{how[0]}")
    at = at.button(key="model_head.restore").click().run()
    _, back = _losses(ids, [])
    assert _metric(at, "Loss on the repeated half") == f"{back:.2f} nats"
    assert session(at).model_head.ablations == ()


def test_a_head_opened_with_earlier_ablations_reads_the_ablated_stream() -> None:
    at = journey("every_head")
    at = head_button(at, "toggle", 0, 1).click().run()  # ablate layer 1 · head 2 (the previous-token head)
    at = head_button(at, "open", 1, 0).click().run()
    no_exception(at)
    s = session(at)
    run = ENGINE.run(list(s.model_head.ids), [ablate(0, 1, "zero")])
    np.testing.assert_array_equal(s.matrices["X"], run.residuals[1])
    assert s.model_head.ablations == ((0, 1, "zero"),)


@pytest.mark.parametrize(
    "mh, says",
    [
        ("induction~9.1~1.2.3~", "the model has 2 layers"),
        ("induction~2.1~1.2.99~", "outside the vocabulary"),
        ("induction~2.1~1.x.3~", "are not whole numbers"),
        ("gpt9~1.1~1.2~", "offers no model"),
        ("upload:abc~1.1~1.2~", "offers no model"),
        ("induction~2.1~1.2~3.1q", "are not such as"),
        ("induction~2.1~1.2~9.9m", "there is no layer 9"),  # counted from 1, as the link counts
        ("induction~2", "is not model~layer.head"),
        ("induction~2.1~" + ".".join(["1"] * 5000) + "~", "characters long"),
        ("<b>x</b>~1.1~1~", "offers no model"),
    ],
)
def test_a_bad_model_head_link_is_named_and_the_default_preset_opens(mh: str, says: str) -> None:
    at = app("scores", {"preset": "model", "mh": mh})
    no_exception(at)
    notes = " ".join(texts(at.warning))
    assert says in notes, notes
    assert session(at).preset_id != "model" and session(at).model_head is None
    assert "<b>" not in " ".join(w.value for w in at.warning)  # user text is text: escaped in the Markdown sent
    # no bare ~ in the Markdown sent: a pair of them strikes the text between through ("model~layer.head~token")
    assert not re.search(r"(?<!\\)~", " ".join(w.value for w in at.warning)), [w.value for w in at.warning]


def test_the_model_pages_keep_their_text_and_ablations_in_the_address() -> None:
    at = journey("every_head")
    at = head_button(at, "toggle", 1, 0).click().run()
    label = [o for o in at.selectbox(key="inside.w.sequence").options if o.startswith("10 words")][0]
    at = at.selectbox(key="inside.w.sequence").set_value(label).run()
    at = head_button(at, "toggle", 1, 0).click().run()  # the text changed, the ablation stays: this restores it
    at = head_button(at, "toggle", 0, 1).click().run()
    query = _query(at)
    assert query["ablate"] == "1.2z-2.1z" or query["ablate"] == "2.1z-1.2z" or query["ablate"] == "1.2z", query
    again = app("every_head", query)
    no_exception(again)
    assert session(again).inside.ids == session(at).inside.ids
    assert session(again).inside.ablations == session(at).inside.ablations
    assert again.selectbox(key="inside.w.sequence").value == label


@pytest.mark.parametrize(
    "query, says",
    [
        ({"ids": "1.2.x"}, "are not whole numbers"),
        ({"ids": "1.2.300"}, "outside the vocabulary"),
        ({"ids": "1"}, "the model reads 2 to"),
        ({"ablate": "7.7z"}, "there is no layer 7"),
        ({"ablate": "1.1k"}, "are not such as"),
        ({"model": "server:nothing"}, "offers no model"),
    ],
)
def test_bad_model_page_values_in_the_address_are_named(query: dict[str, str], says: str) -> None:
    at = app("every_head", query)
    no_exception(at)
    notes = " ".join(texts(at.warning))
    assert says in notes, notes
    assert session(at).inside.ablations == ()
    assert not errors(at)


def test_every_step_page_explain_compare_and_the_exports_work_on_a_head(tmp_path) -> None:
    import json
    import subprocess
    import sys

    from attention.io import codegen
    from attention.ui.core import session as ui_session
    from tests.helpers.apptest import PAGES, open_expander, session

    at = _opened(1, 0, "softmax")
    run = ENGINE.run(list(session(at).model_head.ids))
    for page in ("overview", "tokens", "weights", "qkv", "scores", "scaling", "softmax", "output", "reading"):
        at = goto(at, page)
        no_exception(at)
        assert not errors(at), (page, errors(at))
        assert session(at).preset_id == "model", page
    assert PAGES["every_head"]
    # Explain a cell: the explained cell starts on the second half's first query, at the key an induction head copies
    s = session(at)
    half = len(s.tokens) // 2
    assert s.cell == (half, 1)
    # Compare: pin the head, edit W_q, compare with A
    at = goto(at, "softmax")
    at = at.button(key="cmp.pin").click().run()
    at = edit_cell(at, "W_q", 0, "q1", 25.0)
    no_exception(at)
    assert "Compare weights with A" in " ".join(texts(at.markdown))
    # the exports: the edited head as a preset file and a numpy script that recomputes the model's head
    s = session(at)
    preset = ui_session.export_preset(s)
    assert preset.matrices()["W_q"].tobytes() == s.matrices["W_q"].tobytes()
    script = tmp_path / "head.py"
    script.write_text(codegen.python_script(preset), encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    unedited = ui_session.export_preset(session(_opened(1, 0, "softmax")))
    np.testing.assert_allclose(unedited.compute().weights, run.weights[1, 0], atol=1e-12)
    json.loads(unedited.to_json())  # a preset file the dashboard can load again
    at = open_expander(at, "io")
    labels = {e.proto.label for e in at.get("download_button")}
    assert "Download preset file (.json)" in labels and "Export as Python script" in labels


def test_another_head_is_chosen_on_the_step_pages_with_the_same_text_and_ablations() -> None:
    at = journey("every_head")
    at = head_button(at, "toggle", 0, 0).click().run()  # an ablation the heads opened afterwards keep
    at = head_button(at, "open", 1, 0).click().run()
    at = goto(at, "softmax")
    ref = session(at).model_head
    at = at.selectbox(key="model_head.pick").set_value((1, 1)).run()
    no_exception(at)
    s = session(at)
    assert (s.model_head.layer, s.model_head.head) == (1, 1)
    assert s.model_head.ids == ref.ids and s.model_head.ablations == ((0, 0, "zero"),)
    run = ENGINE.run(list(ref.ids), [ablate(0, 0, "zero")])
    np.testing.assert_array_equal(s.matrices["W_q"], ENGINE.layer_weights(1)[0][:, D : 2 * D])  # head 2's block
    np.testing.assert_allclose(compute.current_trace(s).weights, run.weights[1, 1], atol=1e-12)
    assert _query(at)["mh"].startswith("induction~2.2~")
    assert at.selectbox(key="model_head.pick").value == (1, 1)


def _grid(at, name: str):
    """The matrix grid of ``name`` drawn on the page (its first window of rows and columns): its key and its numbers
    as the grid shows them."""
    key = editor_key(name, session(at))
    assert key in matrix_grids(at), (key, list(matrix_grids(at)))
    return key, grid_numbers(at, key)


def _same(shown: np.ndarray, matrix: np.ndarray) -> None:
    """A grid's window shows ``matrix``'s numbers (as rounded for the grid)."""
    np.testing.assert_allclose(shown, matrix[: shown.shape[0], : shown.shape[1]], rtol=1e-3, atol=1e-3)


def test_a_switch_keeps_the_grid_mounted_and_the_next_edit_reaches_the_new_head_only() -> None:
    """Issue 23 §7: switching the head keeps the grids' widgets (only their numbers change), also after an edit taken
    on head A; the grid is told it now shows other numbers (its ``ver``), so an edit of A's numbers is never applied
    to B's; and an edit after the switch changes B's matrix and nothing else."""
    at = choose_tab(_opened(1, 0, "softmax"), "inputs", "W_k")
    ids = list(session(at).model_head.ids)
    W_q, W_k, W_v, _ = ENGINE.layer_weights(1)
    key_0, _ = _grid(at, "W_k")
    at = at.selectbox(key="model_head.pick").set_value((1, 1)).run()  # to head B with no edit held
    assert _grid(at, "W_k")[0] == key_0  # the grid stayed mounted: the browser redraws its numbers only
    at = at.selectbox(key="model_head.pick").set_value((1, 0)).run()  # back to head A
    at = edit_cell(at, "W_k", 0, "k1", 40.0)  # head A (layer 2 · head 1)
    no_exception(at)
    assert session(at).matrices["W_k"][0, 0] == 40.0
    key_a, _ = _grid(at, "W_k")
    drawn_a = matrix_grids(at)[key_a]["ver"]
    at = at.selectbox(key="model_head.pick").set_value((1, 1)).run()  # head B (layer 2 · head 2)
    no_exception(at)
    s = session(at)
    key_b, shown_b = _grid(at, "W_k")
    assert key_b == key_a and matrix_grids(at)[key_b]["ver"] != drawn_a  # the same grid, told of other numbers
    head_b = {"X": ENGINE.run(ids).residuals[1], "W_q": W_q[:, D : 2 * D], "W_k": W_k[:, D : 2 * D]}
    head_b["W_v"] = W_v[:, D : 2 * D]
    head_b["W_o"] = ENGINE.layer_weights(1)[3][D : 2 * D]  # its rows of the model's W_o
    for name, want in head_b.items():  # B's own numbers, A's edit gone with A
        np.testing.assert_array_equal(s.matrices[name], want)
    _same(shown_b, head_b["W_k"])  # what B's grid shows
    assert _metric(at, "Loss on the repeated half") == f"{_losses(tuple(ids), [])[1]:.2f} nats"
    at = edit_cell(at, "W_k", 1, "k2", -7.5)  # an edit after the switch
    no_exception(at)
    s = session(at)
    want = head_b["W_k"].copy()
    want[1, 1] = -7.5
    np.testing.assert_array_equal(s.matrices["W_k"], want)  # B's matrix with that one cell, nothing of A's edit
    for name in ("X", "W_q", "W_v", "W_o"):
        np.testing.assert_array_equal(s.matrices[name], head_b[name])
    _, second = _losses(tuple(ids), [replace_matrix(1, 1, "W_k", want)])  # the model with B's block replaced
    assert _metric(at, "Loss on the repeated half") == f"{second:.2f} nats"
    _same(_grid(at, "W_k")[1], want)


def test_an_edit_sent_with_a_switch_is_never_applied_to_the_new_head() -> None:
    """A grid edit of head A that reaches the server in the same run as the choice of head B (the switch's callback
    first): B's matrices stay the model's own, and the edit is refused with a message (it names which numbers it was
    typed over, and those are gone)."""
    at = choose_tab(_opened(1, 0, "softmax"), "inputs", "W_k")
    ids = list(session(at).model_head.ids)
    key, _ = _grid(at, "W_k")
    at.selectbox(key="model_head.pick").set_value((1, 1))  # sent in the same run as the edit below, listed first
    at = grid_edit(at, key, {"edited_rows": {0: {"k1": "40"}}, "added_rows": [], "deleted_rows": []})
    no_exception(at)
    s = session(at)
    assert (s.model_head.layer, s.model_head.head) == (1, 1)
    np.testing.assert_array_equal(s.matrices["W_k"], ENGINE.layer_weights(1)[1][:, D : 2 * D])  # B's own block
    assert any(
        "W_k: 40 in row 1, column k1 was typed over numbers no longer shown" in e and "Retype it" in e
        for e in errors(at)
    ), errors(at)
    _, shown = _grid(at, "W_k")
    _same(shown, s.matrices["W_k"])
    assert _metric(at, "Loss on the repeated half") == f"{_losses(tuple(ids), [])[1]:.2f} nats"


def test_an_x_edit_sent_with_a_switch_is_refused_too_though_the_layers_x_is_the_same() -> None:
    """Two heads of one layer read the same X: an X edit of head A sent in the run that opens head B (the switch
    first) is refused all the same, as it was made on a grid drawn for head A."""
    at = choose_tab(_opened(1, 0, "softmax"), "inputs", "X")
    key, _ = _grid(at, "X")
    before = session(at).matrices["X"].copy()
    at.selectbox(key="model_head.pick").set_value((1, 1))
    cols = matrix_grids(at)[key]["cols"]
    at = grid_edit(at, key, {"edited_rows": {0: {cols[0]: "40"}}, "added_rows": [], "deleted_rows": []})
    no_exception(at)
    s = session(at)
    assert (s.model_head.layer, s.model_head.head) == (1, 1)
    np.testing.assert_array_equal(s.matrices["X"], before)
    assert any(f"X: 40 in row 1, column {cols[0]} was typed over numbers no longer" in e for e in errors(at)), errors(
        at
    )


def _head_writes(ids: tuple[int, ...], layer: int, head: int) -> np.ndarray:
    """What one head adds to the residual stream (n, d_model), from the model alone: the stream after its layer, less
    the stream after it with the head's rows of W_o set to zero (the layer's bias and every other head unchanged)."""
    whole = ENGINE.run(list(ids))
    without = ENGINE.run(list(ids), [replace_matrix(layer, head, "W_o", np.zeros((D, ENGINE.config.d_model)))])
    return whole.residuals[layer + 1] - without.residuals[layer + 1]  # (n, d_model)


def test_the_heads_w_o_is_its_rows_of_the_models_and_the_output_is_what_the_head_writes() -> None:
    at = open_views(_opened(1, 0, "output"))  # concat and W_o, opened
    no_exception(at)
    assert not errors(at)
    s = session(at)
    W_o = ENGINE.layer_weights(1)[3]  # (d_model, d_model): the heads' rows one after another
    np.testing.assert_array_equal(s.matrices["W_o"], W_o[:D])  # head 1: the first d_head rows
    trace = compute.current_trace(s)
    assert trace.output.shape == (len(s.tokens), ENGINE.config.d_model)
    np.testing.assert_allclose(trace.output, _head_writes(s.model_head.ids, 1, 0), atol=1e-12)
    shown = " ".join(texts(at.caption))
    assert f"W_o · {D} × {ENGINE.config.d_model}" in shown, shown  # output = concat · W_o, with its shapes
    at = goto(at, "weights")
    no_exception(at)
    assert at.checkbox(key="w.w_o").value is True
    assert any(k.startswith("ed.W_o.") for k in matrix_grids(at)), list(matrix_grids(at))


def test_an_edit_of_w_o_flows_into_the_model_and_the_address_restores_it() -> None:
    at = _opened(1, 0, "weights")
    ids = session(at).model_head.ids
    at = edit_cell(at, "W_o", 3, "o5", -30.0)  # row 4 (the head's 4th value dimension), the stream's 5th dimension
    no_exception(at)
    s = session(at)
    edited = s.matrices["W_o"]
    assert edited[3, 4] == -30.0 and edited.shape == (D, ENGINE.config.d_model)
    changed = ENGINE.layer_weights(1)[3].copy()  # the model's own W_o with one cell changed, run as a whole model
    changed[3, 4] = -30.0
    _, second = _losses(ids, [replace_matrix(1, 0, "W_o", changed[:D])])
    _, unedited = _losses(ids, [])
    assert abs(second - unedited) > 0.01, "the edit should move the loss for this test to mean anything"
    assert _metric(at, "Loss on the repeated half") == f"{second:.2f} nats"
    assert "W_o (1 cell)" in " ".join(texts(at.markdown))
    query = _query(at)
    again = app("weights", query)  # a reload, or the link opened elsewhere
    no_exception(again)
    np.testing.assert_array_equal(session(again).matrices["W_o"], edited)
    assert _metric(again, "Loss on the repeated half") == f"{second:.2f} nats"


def test_dropping_the_heads_w_o_stays_on_the_page_and_bringing_it_back_restores_the_models() -> None:
    at = _opened(1, 0, "weights")
    at = at.checkbox(key="w.w_o").uncheck().run()
    no_exception(at)
    s = session(at)
    assert "W_o" not in s.matrices
    assert "W_o was dropped: the output is the heads' outputs side by side." in texts(at.info)  # nothing was edited
    head = ENGINE.run(list(s.model_head.ids)).head(1, 0)  # the engine's own head: its output is A V, before W_o
    np.testing.assert_allclose(compute.current_trace(s).output, head.output, atol=1e-12)
    captions = [t for t in texts(at.caption) if t.startswith("Changed here but not in the model")]
    assert captions and "W_o (dropped here; the model applies its own)" in captions[0], captions
    _, unedited = _losses(s.model_head.ids, [])
    assert _metric(at, "Loss on the repeated half") == f"{unedited:.2f} nats"  # the model keeps its W_o
    assert _query(at).get("wo") == "0"
    at = at.checkbox(key="w.w_o").check().run()
    np.testing.assert_array_equal(session(at).matrices["W_o"], ENGINE.layer_weights(1)[3][:D])
    assert "wo" not in _query(at)


def _resize(at, dim: str, value: int):
    key = [n.key for n in at.number_input if n.key.startswith(f"w.{dim.replace('_', '')}.")][0]
    at = at.number_input(key=key).set_value(value).run()
    no_exception(at)
    return at


def test_the_heads_w_o_keeps_the_models_width_through_any_d_v_and_still_flows() -> None:
    at = _opened(1, 0, "weights")
    W_o = ENGINE.layer_weights(1)[3][:D]  # (d_head, d_model)
    at = _resize(at, "d_v", 32)  # as wide as the model: W_o must not turn into a square mixing matrix
    assert session(at).matrices["W_o"].shape == (32, 32)
    at = _resize(at, "d_v", 16)
    s = session(at)
    np.testing.assert_array_equal(s.matrices["W_o"], W_o)  # every value that fits was kept, the width is the model's
    assert s.axis_labels("W_o", W_o.shape)[1][:2] == ["o1", "o2"]
    assert not [t for t in texts(at.warning) if "Not in the address" in t]
    at = _resize(at, "d_v", 8)  # the first 8 value dimensions: W_o's first 8 rows
    np.testing.assert_array_equal(session(at).matrices["W_o"], W_o[:8])
    at = at.checkbox(key="w.w_o").uncheck().run()
    assert "W_o was dropped: the output is the heads' outputs side by side." in texts(at.info)  # nothing was edited
    at = at.checkbox(key="w.w_o").check().run()
    np.testing.assert_array_equal(session(at).matrices["W_o"], W_o[:8])  # the model's rows again, not an identity
    at = _resize(at, "d_v", 16)  # rows 9-16 were dropped at d_v = 8: they come back as new draws, as any resize's
    at = edit_cell(at, "W_o", 0, "o1", 3.0)
    edited = session(at).matrices["W_o"]
    assert edited.shape == (D, 32) and edited[0, 0] == 3.0 and np.array_equal(edited[1:8], W_o[1:8])
    W_v = session(at).matrices["W_v"]  # its columns 9-16 are new draws too: both flow into the model
    assert W_v.shape == (32, D) and not np.array_equal(W_v, ENGINE.layer_weights(1)[2][:, :D])
    ivs = [replace_matrix(1, 0, "W_v", W_v), replace_matrix(1, 0, "W_o", edited)]
    _, second = _losses(session(at).model_head.ids, ivs)
    assert _metric(at, "Loss on the repeated half") == f"{second:.2f} nats"
    assert "W_v (256 cells), W_o (257 cells)" in " ".join(texts(at.markdown))  # 32 × 8 new; 8 × 32 new and 1 edit


def test_a_pasted_zero_w_o_answers_as_the_zero_ablation() -> None:
    """Zero rows of W_o remove what the head writes: the model answers as the engine's own zero ablation of the head,
    a different path through the engine (the head's concat set to zero)."""
    at = open_views(_opened(1, 0, "weights"), "import.W_o")  # W_o's import box, opened
    at.text_area(key="imp.W_o.text").input(f"np.array({np.zeros((D, ENGINE.config.d_model)).tolist()})")
    at = at.button(key="imp.W_o.apply").click().run()
    no_exception(at)
    assert not errors(at), errors(at)
    assert not session(at).matrices["W_o"].any()
    _, ablated = _losses(session(at).model_head.ids, [ablate(1, 0, "zero")])
    assert _metric(at, "Loss on the repeated half") == f"{ablated:.2f} nats"
    at.text_area(key="imp.W_o.text").input("[[1, 2], [3, 4]]")  # the wrong shape: named, nothing changes
    at = at.button(key="imp.W_o.apply").click().run()
    no_exception(at)
    assert any("W_o" in e and "16" in e for e in errors(at)), errors(at)
    assert not session(at).matrices["W_o"].any()
    assert not [b for b in at.button if b.key == "imp.W_o.resize"]  # no resize follows from W_o's shape


def test_a_mean_ablated_head_says_its_edits_still_reach_the_model_through_the_mean() -> None:
    at = _opened(1, 0, "weights")
    at = at.button(key="model_head.mean").click().run()
    said = " ".join(texts(at.markdown))
    assert "is mean-ablated in the model:** at each position its output is replaced by the mean" in said, said
    assert "cannot move it" not in said
    at = at.button(key="model_head.restore").click().run()
    at = at.button(key="model_head.zero").click().run()
    assert "is zero-ablated in the model:** its output is removed, so edits here cannot move it." in " ".join(
        texts(at.markdown)
    )


def test_the_overview_and_the_output_page_say_the_output_is_concat_times_w_o() -> None:
    at = _opened(1, 0, "overview")
    n, d_model = len(session(at).tokens), ENGINE.config.d_model
    table = (
        " ".join(texts(at.markdown))
        + " ".join(str(t.value) for t in at.table)
        + str([df.value.to_dict() for df in at.dataframe])
    )
    assert "O = AV · W_o" in table and f"{n} × {d_model}" in table, table[:3000]
    assert f"32 × 16, 32 × 16, 32 × 16, {D} × {d_model}" in table
    at = goto(at, "output")
    prose = " ".join(texts(at.markdown))
    assert "concat row 1 = " in prose and "is what the head adds to the residual stream" in prose, prose[:2000]


def test_names_of_a_w_o_that_is_not_square() -> None:
    from attention import names

    m = {"X": np.zeros((5, 33)), "W_q": np.zeros((33, 16)), "W_k": np.zeros((33, 16)), "W_v": np.zeros((33, 16))}
    assert names.dims_of(m).d_out is None and names.Dims(5, 33, 16, 16).shape("W_o") == (16, 16)
    d = names.dims_of({**m, "W_o": np.zeros((16, 32))})
    assert d.d_out == 32 and d.shape("W_o") == (16, 32)
    assert names.dims_of({**m, "W_o": np.eye(16)}).d_out is None
    toks = ["a", "b", "c", "d", "e"]
    rows, cols = names.axis_labels("W_o", (16, 32), toks)
    assert (rows, cols) == (names.dimension_labels("v", 16), names.dimension_labels("o", 32))
    assert names.axis_labels("W_o", (4, 4), toks)[1] == ["v1", "v2", "v3", "v4"]
    assert names.axis_labels("output", (5, 32), toks, d_v=16)[1][:2] == ["o1", "o2"]
    assert names.axis_labels("output", (5, 16), toks, d_v=16)[1][:2] == ["v1", "v2"]
    assert names.axis_labels("output", (5, 32), toks)[1][:2] == ["v1", "v2"]  # without d_v: V's width, as before


def test_cross_attention_on_a_head_labels_its_output_by_the_models_width() -> None:
    ids = ".".join(str(i) for i in [3, 1, 4, 1, 5, 9, 2, 6] * 2)
    at = app("tokens", {"preset": "model", "mh": f"induction~2.1~{ids}~", "src": "le chat assis"})
    no_exception(at)
    assert not errors(at), errors(at)
    s = session(at)
    assert s.source and compute.current_trace(s).output.shape == (16, ENGINE.config.d_model)
    tables = [df for df in at.dataframe if "o1" in list(getattr(df.value, "columns", []))]
    assert tables and list(tables[-1].value.columns)[:3] == ["o1", "o2", "o3"]
    assert "The first 16 of its 32 columns; the zip download has output.csv in full." in texts(at.caption)


def test_learning_only_what_comes_after_the_weights_is_said_to_move_nothing() -> None:
    ids = ".".join(str(i) for i in [3, 1, 4, 1, 5, 9, 2, 6] * 2)
    at = app("learn", {"preset": "model", "mh": f"induction~2.1~{ids}~"})

    def box(name: str):
        return at.checkbox(key=f"learn.learns.{name}.{session(at).grids}")

    offered = [c.key.split(".")[2] for c in at.checkbox if c.key.startswith("learn.learns.")]
    assert {"X", "W_q", "W_k", "W_v", "W_o"} <= set(offered), offered
    at = box("W_o").check().run()
    for name in offered:
        if name != "W_o" and box(name).value:
            at = box(name).uncheck().run()
    no_exception(at)
    assert session(at).learn.learn == ("W_o",)
    said = " ".join(texts(at.caption))
    assert "W_o come after the weights: learning only them cannot move the loss" in said, said
    at = box("W_q").check().run()
    assert "cannot move the loss" not in " ".join(texts(at.caption))
