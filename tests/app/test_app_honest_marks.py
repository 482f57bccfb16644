"""What first-time learners tripped over, as AppTests: options that change nothing are not edits, a mask is
described as a mask, the edited cell is named, a loaded file is named, labels say what they show, and the Output
page shows concat · W_o and explains a clicked cell. Every expected number comes from numpy, not the page."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import attention
from attention.errors import cell_name
from tests.helpers.apptest import (
    choose_tab,
    conventions,
    edit_cell,
    goto,
    journey,
    no_exception,
    open_expander,
    open_views,
    session,
    texts,
)


def captions(at) -> str:
    return " | ".join(c.value for c in at.caption)


def chart_specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def test_switching_the_softmax_stabiliser_is_not_an_edit() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    before = session(at).matrices["W_q"].copy()
    at = conventions(at).selectbox(key="sb.softmax").set_value("global_max").run()
    no_exception(at)
    assert session(at).options.softmax == "global_max"
    text = captions(at)
    assert "Edited" not in text and "cells differ" not in text, text
    assert "only rounding moved" in " ".join(m.value for m in at.markdown) + text  # the badge says why it still matches
    np.testing.assert_array_equal(session(at).matrices["W_q"], before)


def test_a_causal_mask_is_described_as_a_mask_not_as_a_change_of_value() -> None:
    at = open_views(journey("softmax", {"preset": "the_cat_sat"}), "table.")  # the weights as a table, opened
    at = conventions(at).selectbox(key="sb.mask").set_value("causal").run()
    no_exception(at)
    text = captions(at)
    n = len(session(at).tokens)
    assert f"{n * (n - 1) // 2} cells are masked here and not in the unedited preset" in text, text
    assert "a mask, not a change of value" in text
    assert not re.search(r"largest change 0(;|\.(?!\d))", text), text  # a change of 0 is no change
    # the weights of the unmasked cells do move (rows renormalise): those are named as changes, by numpy's count
    m = {k: np.squeeze(v) for k, v in attention.load_preset("the_cat_sat").matrices().items()}
    sc = (m["X"] @ m["W_q"]) @ (m["X"] @ m["W_k"]).T / np.sqrt(m["W_q"].shape[1])
    keep = np.tril(np.ones((n, n), bool))

    def softmax(z: np.ndarray) -> np.ndarray:
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    moved = int((np.abs(softmax(np.where(keep, sc, -np.inf)) - softmax(sc))[keep] > 1e-12).sum())
    assert f"{moved} of {n * n} cells differ" in text, text


def test_the_scaled_heatmap_says_masked_cells_are_grey_only_when_something_is_masked() -> None:
    at = journey("scaling", {"preset": "the_cat_sat"})
    titles = [json.dumps(spec) for spec in chart_specs(at)]
    assert not any("masked cells grey" in t for t in titles)
    at = conventions(at).selectbox(key="sb.mask").set_value("causal").run()
    assert any("masked cells grey" in json.dumps(spec) for spec in chart_specs(at))


def test_the_heatmap_tooltip_names_its_fields_for_a_person() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    spec = chart_specs(at)[0]
    titles = []

    def walk(node) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "tooltip" and isinstance(v, list):
                    titles.extend(f.get("title", f.get("field")) for f in v)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    assert titles and "text" not in titles and "shown" not in titles, titles
    assert {"query", "key"} & {str(t).split(" ")[0] for t in titles}, titles


def test_an_edit_names_the_cell_it_changed_with_its_old_and_new_value() -> None:
    at = journey("softmax", {"preset": "the_cat_sat"})
    at = choose_tab(at, "inputs", "W_q")
    s = session(at)
    old = float(s.matrices["W_q"][1, 2])
    rows, cols = s.axis_labels("W_q", s.matrices["W_q"].shape)
    at = edit_cell(at, "W_q", 1, cols[2], 2.5)
    no_exception(at)
    assert session(at).matrices["W_q"][1, 2] == 2.5
    want = f"Changed W_q {cell_name((1, 2), rows, cols)} {old:.4f} → 2.500"  # 4 significant digits
    assert any(want in c for c in texts(at.caption)), texts(at.caption)
    at = at.run()  # a rerun that changes nothing keeps the note (messages last until the state next changes)
    assert any(want in c for c in texts(at.caption)), texts(at.caption)
    at = edit_cell(at, "W_q", 1, cols[2], 2.5)  # the same value again: nothing changed, nothing new is claimed
    assert not any("2.5000 → 2.5000" in c for c in texts(at.caption)), texts(at.caption)
    at = edit_cell(at, "W_q", 0, cols[0], -1.0)  # another edit: the note names that one only
    shown = " ".join(texts(at.caption))
    assert f"{cell_name((0, 0), rows, cols)}" in shown and want not in shown, shown


def test_a_loaded_preset_file_is_named_in_the_sidebar() -> None:
    from attention.ui.core import session as ui_session

    at = journey("softmax", {"preset": "the_cat_sat"})
    preset = ui_session.export_preset(session(at))
    data = json.loads(preset.to_json())
    data["title"] = "My homework"
    at2 = journey("weights", {"preset": "i_am_batman"})
    at2 = (
        open_expander(at2, "io")
        .file_uploader(key="io.preset.file")
        .set_value(("homework.json", json.dumps(data).encode(), "application/json"))
        .run()
    )
    no_exception(at2)
    shown = at2.selectbox(key="sb.preset")
    assert shown.format_func(shown.value) == "From a file: My homework"
    assert "I am Batman" not in shown.format_func(shown.value)


def test_the_output_page_shows_concat_and_w_o_whose_product_is_the_output() -> None:
    at = journey("weights", {"preset": "the_cat_sat", "heads": "2"})
    at = at.checkbox(key="w.w_o").check().run()  # mix the heads by W_o (the identity at first)
    s = session(at)
    assert "W_o" in s.matrices
    w_cols = s.axis_labels("W_o", s.matrices["W_o"].shape)[1]
    at = edit_cell(at, "W_o", 0, w_cols[1], 0.5)  # now head 1's first column leaks into output column 2
    at = open_views(goto(at, "output"))  # concat and W_o, and the output as a table, opened
    no_exception(at)
    m = session(at).matrices
    assert m["W_o"][0, 1] == 0.5
    # oracle: each head by a naive loop over its column block, side by side, then times W_o
    q, k, v = m["X"] @ m["W_q"], m["X"] @ m["W_k"], m["X"] @ m["W_v"]
    n = q.shape[0]
    heads = []
    for h in range(2):
        qs, ks, vs = q[:, 2 * h : 2 * h + 2], k[:, 2 * h : 2 * h + 2], v[:, 2 * h : 2 * h + 2]
        out = np.zeros((n, 2))
        for i in range(n):
            sc = [sum(qs[i, c] * ks[j, c] for c in range(2)) / np.sqrt(2) for j in range(n)]
            e = np.exp(np.array(sc) - max(sc))
            out[i] = (e / e.sum()) @ vs
        heads.append(out)
    concat = np.concatenate(heads, axis=1)  # (n, d_v)
    assert any("output = concat · W_o" in md.value for md in at.markdown)
    shown = [d.value.to_numpy(dtype=float) for d in at.dataframe if d.value.shape in ((n, 4), (4, 4))]
    assert any(t.shape == (n, 4) and np.allclose(t, concat, rtol=0, atol=1e-12) for t in shown), "concat shown"
    assert any(t.shape == (4, 4) and np.array_equal(t, m["W_o"]) for t in shown), "W_o shown"
    assert any(t.shape == (n, 4) and np.allclose(t, concat @ m["W_o"], rtol=0, atol=1e-12) for t in shown), "output"
    assert not np.allclose(concat @ m["W_o"], concat)  # the edit did mix


def test_the_output_page_explains_a_cell_of_its_weights() -> None:
    at = open_views(journey("output", {"preset": "the_cat_sat", "digits": "6"}), "view.explain_cell")  # at 6 digits
    no_exception(at)
    assert any("Explain a cell" in md.value for md in at.markdown)
    m = {k: np.squeeze(v) for k, v in attention.load_preset("the_cat_sat").matrices().items()}
    q, k = m["X"] @ m["W_q"], m["X"] @ m["W_k"]
    score = sum(q[0, c] * k[0, c] for c in range(q.shape[1]))  # the default cell: query 1, key 1
    scaled = q @ k.T / np.sqrt(q.shape[1])
    weight = np.exp(scaled[0, 0] - scaled[0].max()) / np.exp(scaled[0] - scaled[0].max()).sum()
    body = " ".join(md.value for md in at.markdown)
    assert f"S = **{score:.6g}**" in body, body[-800:]
    assert f"= **{weight:.6g}** ({weight:.1%} of" in body, body[-800:]


@pytest.mark.parametrize("page", ["qkv", "scores", "scaling", "softmax", "output"])
def test_every_table_shows_the_chosen_digits(page: str) -> None:
    """A read-only table's numbers are written with the digits control's significant digits, every one of them: with
    the default 4, 0.014954 is "0.01495" and 1 is "1.000" (the texts the grid draws, sent beside the numbers), never
    the 17 digits Python stores; a table the browser formats itself has fixed decimals (a "%4f" once slipped
    through: a width, not a precision, and the browser showed every digit)."""
    import pyarrow as pa

    at = open_views(journey(page, {"preset": "the_cat_sat", "mask": "causal"}))  # every view and table, opened
    checked = 0
    for d in at.dataframe:
        config = json.loads(d.proto.columns or "{}")
        formats = [v["type_config"]["format"] for v in config.values() if v.get("type_config", {}).get("format")]
        assert all(re.fullmatch(r"%\.\d+f", f) for f in formats), formats
        if not d.proto.arrow_data.HasField("styler"):
            continue
        shown = pa.ipc.open_stream(d.proto.arrow_data.styler.display_values).read_all().to_pandas()
        values = d.value.to_numpy(dtype=float)
        texts = shown.to_numpy().reshape(-1).tolist()[-values.size :]  # the cells, after any label column
        for text, v in zip(texts, values.reshape(-1).tolist(), strict=True):
            if np.isneginf(v):
                assert text == "−∞"
                continue
            mantissa = str(text).lstrip("-").split("e")[0].replace(".", "")
            assert len(mantissa.lstrip("0") or mantissa) == 4, (text, v)  # 4 significant digits, zeros kept
            assert float(text) == pytest.approx(v, rel=5e-4, abs=0 if v else 1e-12), (text, v)
        checked += 1
    assert checked, "no table of numbers on the page"
