"""The Logit lens and Attribution pages under AppTest: on the shipped model every number against a naive numpy forward
pass written here from the weights (loops over heads, no engine code); the journey's two steps (the prediction
becomes top 1 at layer 2; layer 2 · head 1 has the largest share); a position or token chosen; bad values refused
with a message and nothing changed; a GPT-2 and a Llama-family checkpoint against the engine and transformers."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from attention.model import attribute, builtin, lens, load
from attention.ui.core import keys
from tests.helpers.apptest import app, drawn_cells, goto, head_button, head_texts, journey, no_exception, session, texts

ENGINE = builtin("induction")  # a model of its own, not the page's
NUMBER = re.compile(r"-?\d+\.\d+")


def _naive(ids: list[int], t: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The shipped model (attention only, no biases, no norms) by hand at position t: the stream after the
    embeddings and after each layer (each (d,)), and each head's output through its rows of W_o, (L, H, d)."""
    p, c = ENGINE.params, ENGINE.config
    H, dh = c.n_heads, c.d_model // c.n_heads
    x = p["W_E"][ids] + p["W_pos"][: len(ids)]  # (n, d)
    streams, heads = [x[t].copy()], np.zeros((c.n_layers, H, c.d_model))
    for layer in range(c.n_layers):
        q, k, v = (x @ p[f"{layer}.{w}"] for w in ("W_q", "W_k", "W_v"))  # (n, d) each
        out = np.zeros_like(x)
        for h in range(H):
            cols = slice(h * dh, (h + 1) * dh)
            for i in range(len(ids)):
                s = np.array([q[i, cols] @ k[j, cols] / np.sqrt(dh) for j in range(i + 1)])  # causal: keys 0 .. i
                w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                written = (w @ v[: i + 1, cols]) @ p[f"{layer}.W_o"][cols]  # (d,)
                out[i] += written
                if i == t:
                    heads[layer, h] = written
        x = x + out
        streams.append(x[t].copy())
    return streams, heads, p["W_U"]


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def _seen(piece: str) -> str:
    """A token as the pages write it: whitespace marked (␣ ↵ ⇥), other control characters as \\x0c."""
    marked = "".join({" ": "␣", "\n": "↵", "\t": "⇥", "\r": "↵"}.get(ch, ch) for ch in piece) or "∅"
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in marked)


def _md(at) -> str:
    return " ".join(t.replace("**", "") for t in texts(at.markdown))


def _within_its_digits(shown: str, value: float) -> None:
    """A number as the page writes it equals ``value`` to the last digit it shows."""
    decimals = len(shown.split(".")[1])
    assert abs(float(shown) - value) <= 0.5 * 10.0**-decimals + 1e-12, (shown, value)


def _lens_table_matches(at, ids: list[int], t: int) -> None:
    streams, _, W_U = _naive(ids, t)
    table = at.dataframe[0].value
    assert list(table.index) == ["embeddings", "layer 1", "layer 2"]
    pieces = list(ENGINE.vocab.words)
    for row, x in zip(table.index, streams, strict=True):
        p = _softmax(x @ W_U)  # (V,)
        best = np.argsort(-p, kind="stable")[:5]
        for k in range(5):
            token, shown = table.loc[row, f"top {k + 1}"].rsplit("  ", 1)
            assert token == pieces[best[k]], (row, k)
            _within_its_digits(shown, p[best[k]])


def test_the_lens_on_the_shipped_model_against_a_forward_pass_by_hand() -> None:
    at = app("logit_lens")
    no_exception(at)
    ids, t = list(session(at).inside.ids), session(at).inside.position
    assert t == len(ids) // 2  # the first token of the repeat: its next token can be copied
    _lens_table_matches(at, ids, t)
    streams, _, W_U = _naive(ids, t)
    run = ENGINE.run(ids)
    np.testing.assert_allclose(streams[-1] @ W_U, run.logits[t], rtol=0, atol=1e-9)  # the last row is the output
    np.testing.assert_allclose(lens(run, t)[-1], run.logits[t], rtol=0, atol=1e-12)
    # the journey's step 1: the prediction becomes top 1 at layer 2, and not before
    top = [int(np.argmax(x @ W_U)) for x in streams]
    assert top[2] == int(np.argmax(run.logits[t])) and top[1] != top[2] and top[0] != top[2]
    assert "it first becomes the top token at layer 2" in _md(at)
    line = at.get("vega_lite_chart")[0]
    rows = [r for rows in drawn_cells(line) for r in rows]
    np.testing.assert_allclose([r["probability"] for r in rows], [_softmax(x @ W_U)[top[2]] for x in streams])


def test_the_attribution_on_the_shipped_model_against_a_forward_pass_by_hand() -> None:
    at = app("attribution")
    no_exception(at)
    ids, t = list(session(at).inside.ids), session(at).inside.position
    streams, heads, W_U = _naive(ids, t)
    token = int(np.argmax(streams[-1] @ W_U))
    shares = heads @ W_U[:, token]  # (L, H)
    embedded = float((ENGINE.params["W_E"][ids[t]] + ENGINE.params["W_pos"][t]) @ W_U[:, token])
    logit = float(streams[-1] @ W_U[:, token])
    assert abs(embedded + shares.sum() - logit) <= 1e-9  # the parts add up to the logit
    a = attribute(ENGINE.run(ids), t, token)
    parts = a.embeddings + a.biases + a.heads.sum() + a.mlps.sum()
    assert abs(parts - a.total) <= 1e-9 and abs(a.total - logit) <= 1e-9
    cells = drawn_cells(at.get("vega_lite_chart")[0])[0]
    drawn = np.array([[c["value"] for c in cells if c["query"] == f"layer {r + 1}"] for r in range(2)])
    np.testing.assert_allclose(drawn, shares, rtol=0, atol=1e-9)
    md = _md(at)
    # the journey's step 2: layer 2 · head 1 has the largest share
    assert np.unravel_index(np.argmax(shares), shares.shape) == (1, 0)
    assert "The largest share of a head: layer 2 · head 1" in md
    # the parts this model has (no biases, no MLPs: none written as a 0 it does not have)
    said = re.search(r"embeddings (\S+) \+ Σ heads (\S+) = (\S+), the logit", md)
    assert said, md
    for shown, value in zip(said.groups(), (embedded, shares.sum(), logit), strict=True):
        _within_its_digits(shown, value)
    assert "biases" not in said.group(0) and "MLPs" not in said.group(0)
    assert "This model has no final norm" in md
    assert "This model is attention-only: it has no MLPs; the heads and the embeddings are all (it has no biases)." in (
        " ".join(texts(at.caption))
    )


def test_a_position_and_a_token_chosen_change_the_numbers_and_every_heads_position() -> None:
    at = journey("logit_lens")
    ids = list(session(at).inside.ids)
    at = at.selectbox(key=keys.READOUT_POSITION).set_value(16).run()
    no_exception(at)
    assert session(at).inside.position == 16
    _lens_table_matches(at, ids, 16)
    at = at.text_input(key=keys.READOUT_TOKEN).input("ba").run()
    no_exception(at)
    ba = list(ENGINE.vocab.words).index("ba")
    assert session(at).inside.token == ba and "“ba”" in at.dataframe[0].value.columns
    streams, heads, W_U = _naive(ids, 16)
    for shown, x in zip(at.dataframe[0].value["“ba”"], streams, strict=True):
        p = _softmax(x @ W_U)
        _within_its_digits(shown.split()[0], p[ba])
        assert f"(rank {int((p > p[ba]).sum()) + 1})" in shown
    at = goto(at, "attribution")
    no_exception(at)
    cells = drawn_cells(at.get("vega_lite_chart")[0])[0]
    drawn = np.array([[c["value"] for c in cells if c["query"] == f"layer {r + 1}"] for r in range(2)])
    np.testing.assert_allclose(drawn, heads @ W_U[:, ba], rtol=0, atol=1e-9)
    assert "position 17 (“" in _md(at) and "token “ba”" in _md(at)
    at = goto(at, "every_head")
    no_exception(at)
    assert at.selectbox(key=keys.INSIDE_POSITION).value == 16
    captions = head_texts(at, np.ndindex(2, 2), "Share of the logit")  # each head chosen in turn
    assert len(captions) == 4 and all("of “ba” at position 17" in c for c in captions)
    for c, share in zip(captions, (heads @ W_U[:, ba]).ravel(), strict=True):
        _within_its_digits(NUMBER.search(c).group(), share)


@pytest.mark.parametrize("page", ["logit_lens", "attribution"])
def test_an_unknown_token_or_two_tokens_are_refused_and_nothing_changes(page: str) -> None:
    at = app(page)
    at = at.text_input(key=keys.READOUT_TOKEN).input("ba").run()
    before = session(at).inside
    table = at.dataframe[0].value.copy() if page == "logit_lens" else None
    for typed, said in (("zzz", "“zzz” is not a token of this model's vocabulary"), ("ba be", "“ba be” is not")):
        at = at.text_input(key=keys.READOUT_TOKEN).input(typed).run()
        no_exception(at)
        assert any(said in e and "Nothing changed." in e for e in texts(at.error)), texts(at.error)
        assert dataclasses.replace(session(at).inside, readout_message="") == before
        assert session(at).inside.token == before.token and session(at).inside.position == before.position
        if table is not None:
            assert at.dataframe[0].value.equals(table)
    at = at.text_input(key=keys.READOUT_TOKEN).input("").run()  # empty: the model's prediction again
    assert session(at).inside.token is None and not at.error


def test_bad_positions_and_tokens_in_the_address_are_named_and_change_nothing() -> None:
    at = app("logit_lens", {"at": "99", "tok": "12x"})
    no_exception(at)
    said = " ".join(texts(at.warning))
    assert "The link's token “12x” is not a token id" in said
    assert "there is no position 99: the text has 24 tokens" in said
    assert session(at).inside.position == 12 and session(at).inside.token is None
    at = app("attribution", {"at": "5", "tok": "4000"})
    assert "there is no token 4000: the model's vocabulary has 32" in " ".join(texts(at.warning))
    assert session(at).inside.position == 4 and session(at).inside.token is None
    at = app("attribution", {"at": "5", "tok": "3"})
    assert (session(at).inside.position, session(at).inside.token) == (4, 3) and not at.warning
    assert at.query_params["at"] == "5" and at.query_params["tok"] == "3"  # the address keeps them


def test_a_head_chosen_without_the_mouse_opens_on_the_step_pages() -> None:
    at = journey("attribution")
    assert at.selectbox(key=keys.READOUT_PICK).value == "layer 2 · head 1"  # the largest share first
    at = at.selectbox(key=keys.READOUT_PICK).set_value("layer 1 · head 2").run()
    at = at.button(key=keys.READOUT_OPEN).click().run()
    no_exception(at)
    ref = session(at).model_head
    assert (ref.layer, ref.head, ref.model_id) == (0, 1, "induction") and ref.ids == session(at).inside.ids
    assert "The step pages now show layer 1 · head 2" in " ".join(texts(at.success))


def _server(monkeypatch: pytest.MonkeyPatch, folder, page: str):  # noqa: ANN202, ANN001
    monkeypatch.setenv("ATTENTION_MODELS", f"tiny={folder}")
    at = journey(page)
    at = at.selectbox(key=keys.INSIDE_MODEL).set_value("server:tiny").run()
    no_exception(at)
    return at


def test_a_gpt2_checkpoint_its_mlps_and_layernorm_against_transformers(gpt2, monkeypatch) -> None:  # noqa: ANN001
    import torch

    folder, model = gpt2
    at = _server(monkeypatch, folder, "attribution")
    ids, t = list(session(at).inside.ids), session(at).inside.position
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double().numpy()  # (n, V): transformers' own
    token = int(np.argmax(logits[t]))
    a = attribute(load(folder).run(ids), t, token)
    assert abs(a.embeddings + a.biases + a.heads.sum() + a.mlps.sum() - a.total) <= 1e-9 * max(1, abs(a.total))
    assert abs(a.total - logits[t, token]) <= 1e-4 * max(1, abs(logits[t, token]))
    charts = at.get("vega_lite_chart")
    assert len(charts) == 2  # the heads' heatmap and the MLPs' bars
    bars = [r for rows in drawn_cells(charts[1]) for r in rows]
    np.testing.assert_allclose([b["share"] for b in bars], a.mlps, rtol=1e-9, atol=1e-9)
    md = _md(at)
    assert "The final norm's scale is held at its value at this position" in md and "(LayerNorm)" in md
    assert f"here {a.scale:.6g}" in md
    at = goto(at, "logit_lens")
    no_exception(at)
    row = at.dataframe[0].value.iloc[-1]
    assert row["top 1"].rsplit("  ", 1)[0] == _seen(load(folder).pieces([token])[0])


def test_a_llama_family_checkpoint_lens_and_attribution(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    import torch
    from transformers import AutoModelForCausalLM

    from tests.helpers.families import tiny_llama

    folder = tiny_llama(tmp_path / "llama")
    at = _server(monkeypatch, folder, "logit_lens")
    ids, t = list(session(at).inside.ids), session(at).inside.position
    m = load(folder)
    hf = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float64).eval()
    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_hidden_states=True)
    # every layer's lens against transformers' hidden states through its final norm and lm_head
    with torch.no_grad():
        oracle = [hf.lm_head(hf.model.norm(h[0, t])).numpy() for h in out.hidden_states[:-1]]
    oracle.append(out.logits[0, t].numpy())
    np.testing.assert_allclose(lens(m.run(ids), t), np.stack(oracle), rtol=1e-6, atol=1e-6)
    pieces = m.vocab.pieces(range(m.config.vocab_size))
    table = at.dataframe[0].value
    assert len(table) == m.config.n_layers + 1
    for row, logits in zip(table.index, oracle, strict=True):
        p = _softmax(logits)
        best = int(np.argmax(p))
        token, shown = table.loc[row, "top 1"].rsplit("  ", 1)
        assert token == _seen(pieces[best]) or p[best] - np.sort(p)[-2] < 1e-9
        _within_its_digits(shown, p[best])
    at = goto(at, "attribution")
    no_exception(at)
    a = attribute(m.run(ids), t)
    assert abs(a.embeddings + a.biases + a.heads.sum() + a.mlps.sum() - a.total) <= 1e-9 * max(1, abs(a.total))
    assert "(RMSNorm)" in _md(at) and len(at.get("vega_lite_chart")) == 2


def test_a_run_the_engine_will_not_attribute_is_said_plainly(monkeypatch) -> None:  # noqa: ANN001
    """A run with a patched stream (no part of the model wrote it) is refused by attribute(): the page says why."""
    from attention.errors import AttentionError
    from attention.ui.modelpages import readout

    def refuse(*args: object) -> None:
        raise AttentionError("this run has a patched residual stream, which no part of the model wrote")

    readout.attributed.clear()
    monkeypatch.setattr(readout, "attribute", refuse)
    try:
        at = app("attribution")
        no_exception(at)
        assert any("this run has a patched residual stream" in e for e in texts(at.error)), texts(at.error)
        assert not at.get("vega_lite_chart")
    finally:
        readout.attributed.clear()


def test_the_ablations_of_every_head_are_read_through() -> None:
    """Heads ablated on Every head: the lens reads the ablated run, and a zero-ablated head's share is exactly 0."""
    from attention.model import ablate

    at = journey("every_head")
    at = head_button(at, "toggle", 1, 0).click().run()  # zero-ablate layer 2 · head 1
    at = goto(at, "attribution")
    no_exception(at)
    ids, t = list(session(at).inside.ids), session(at).inside.position
    run = ENGINE.run(ids, [ablate(1, 0, "zero")])
    a = attribute(run, t)
    cells = drawn_cells(at.get("vega_lite_chart")[0])[0]
    drawn = np.array([[c["value"] for c in cells if c["query"] == f"layer {r + 1}"] for r in range(2)])
    assert drawn[1, 0] == 0.0
    np.testing.assert_allclose(drawn, a.heads, rtol=0, atol=1e-12)
    assert "With the heads ablated on the Every head page: layer 2 · head 1 (zero)." in texts(at.caption)
    at = goto(at, "logit_lens")
    no_exception(at)
    p = np.exp(lens(run, t) - lens(run, t).max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    for r, row in enumerate(at.dataframe[0].value.index):
        _within_its_digits(at.dataframe[0].value.loc[row, "top 1"].rsplit("  ", 1)[1], p[r].max())
