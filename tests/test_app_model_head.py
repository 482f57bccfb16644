"""A model's head opened on the step pages (issue 23 §2, §3, §7): its numbers, edits that flow back into the model,
ablating it from its page, and the address that restores it; every number against the engine run directly."""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import ablate, builtin, replace_matrix, roles
from attention.ui.core import compute
from attention.ui.inputs.editors import editor_key
from tests.apptest_util import (
    app,
    choose_tab,
    edit_cell,
    errors,
    goto,
    grid_edit,
    journey,
    no_exception,
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
    at = at.button(key=f"inside.open.{layer}.{head}").click().run()
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
    at = at.button(key="inside.toggle.0.1").click().run()  # ablate layer 1 · head 2 (the previous-token head)
    at = at.button(key="inside.open.1.0").click().run()
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


def test_the_model_pages_keep_their_text_and_ablations_in_the_address() -> None:
    at = journey("every_head")
    at = at.button(key="inside.toggle.1.0").click().run()
    label = [o for o in at.selectbox(key="inside.w.sequence").options if o.startswith("10 words")][0]
    at = at.selectbox(key="inside.w.sequence").set_value(label).run()
    at = at.button(key="inside.toggle.1.0").click().run()  # the text changed, the ablation stays: this restores it
    at = at.button(key="inside.toggle.0.1").click().run()
    query = _query(at)
    assert query["ablate"] == "1.2z-2.1z" or query["ablate"] == "2.1z-1.2z" or query["ablate"] == "1.2z", query
    again = app("every_head", query)
    no_exception(again)
    assert again.session_state["inside.ids"] == at.session_state["inside.ids"]
    assert again.session_state["inside.ablations"] == at.session_state["inside.ablations"]
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
    assert at.session_state["inside.ablations"] == ()
    assert not errors(at)


def test_every_step_page_explain_compare_and_the_exports_work_on_a_head(tmp_path) -> None:
    import json
    import subprocess
    import sys

    from attention.io import codegen
    from attention.ui.core import session as ui_session
    from tests.apptest_util import PAGES, open_expander

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
    at = at.button(key="inside.toggle.0.0").click().run()  # an ablation the heads opened afterwards keep
    at = at.button(key="inside.open.1.0").click().run()
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
    grids = [e for e in at.dataframe if e.key == key]
    assert grids, (key, [e.key for e in at.dataframe])
    return key, grids[0].value.to_numpy(dtype=float)


def _same(shown: np.ndarray, matrix: np.ndarray) -> None:
    """A grid's window shows ``matrix``'s numbers (as rounded for the grid)."""
    np.testing.assert_allclose(shown, matrix[: shown.shape[0], : shown.shape[1]], rtol=1e-3, atol=1e-3)


def test_a_switch_keeps_the_grid_mounted_and_the_next_edit_reaches_the_new_head_only() -> None:
    """Issue 23 §7: switching the head keeps the grids' widgets (only their numbers change), so an edit made on head A
    must never be re-applied to head B, and an edit after the switch must change B's matrix and nothing else."""
    at = _opened(1, 0, "softmax")
    ids = list(session(at).model_head.ids)
    W_q, W_k, W_v, _ = ENGINE.layer_weights(1)
    at = edit_cell(at, "W_k", 0, "k1", 40.0)  # head A (layer 2 · head 1)
    no_exception(at)
    assert session(at).matrices["W_k"][0, 0] == 40.0
    key_a, _ = _grid(at, "W_k")
    at = at.selectbox(key="model_head.pick").set_value((1, 1)).run()  # head B (layer 2 · head 2)
    no_exception(at)
    s = session(at)
    key_b, shown_b = _grid(at, "W_k")
    assert key_b == key_a  # the grid stayed mounted: the browser redraws its numbers only
    head_b = {"X": ENGINE.run(ids).residuals[1], "W_q": W_q[:, D : 2 * D], "W_k": W_k[:, D : 2 * D]}
    head_b["W_v"] = W_v[:, D : 2 * D]
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
    for name in ("X", "W_q", "W_v"):
        np.testing.assert_array_equal(s.matrices[name], head_b[name])
    _, second = _losses(tuple(ids), [replace_matrix(1, 1, "W_k", want)])  # the model with B's block replaced
    assert _metric(at, "Loss on the repeated half") == f"{second:.2f} nats"
    _same(_grid(at, "W_k")[1], want)


def test_an_edit_sent_with_a_switch_is_never_applied_to_the_new_head() -> None:
    """A grid edit of head A that reaches the server in the same run as the choice of head B (the switch's callback
    first): B's matrices stay the model's own, the edit is refused with a message, and the grids are renewed."""
    from attention.ui.state import core

    at = choose_tab(_opened(1, 0, "softmax"), "inputs", "W_k")
    ids = list(session(at).model_head.ids)
    key, _ = _grid(at, "W_k")
    assert key.startswith(core.GRID_KEYS)  # the grids' keys are the ones checked for pending edits
    at.selectbox(key="model_head.pick").set_value((1, 1))  # sent in the same run as the edit below, listed first
    at = grid_edit(at, key, {"edited_rows": {0: {"k1": "40"}}, "added_rows": [], "deleted_rows": []})
    no_exception(at)
    s = session(at)
    assert (s.model_head.layer, s.model_head.head) == (1, 1)
    np.testing.assert_array_equal(s.matrices["W_k"], ENGINE.layer_weights(1)[1][:, D : 2 * D])  # B's own block
    assert any("W_k: that edit was typed over numbers no longer shown" in e for e in errors(at)), errors(at)
    new_key, shown = _grid(at, "W_k")
    assert new_key != key
    _same(shown, s.matrices["W_k"])
    assert _metric(at, "Loss on the repeated half") == f"{_losses(tuple(ids), [])[1]:.2f} nats"
