"""The First token page under AppTest: every head's mean weight on token 1 against a naive loop over the weights, the
strongest sink's value norms against transformers' own projections (a server GPT-2 folder), the sentences' numbers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attention.model import builtin
from tests.helpers.apptest import app, goto, head_button, journey, no_exception, session, texts

ENGINE = builtin("induction")  # a model of its own, not the page's


def _naive_share(weights: np.ndarray) -> np.ndarray:
    """Mean weight on token 1 over queries 2 .. n, head by head, by loops: (L, H)."""
    L, H, n, _ = weights.shape
    out = np.zeros((L, H))
    for layer in range(L):
        for head in range(H):
            total = 0.0
            for t in range(1, n):
                total += float(weights[layer, head, t, 0])
            out[layer, head] = total / (n - 1)
    return out


def _md(at) -> str:
    return " ".join(t.replace("**", "") for t in texts(at.markdown))


def test_the_shipped_model_every_heads_share_on_token_1_and_its_strongest_sink() -> None:
    at = app("first_token")
    no_exception(at)
    ids = list(session(at).inside.ids)
    share = _naive_share(ENGINE.run(ids).weights)
    grid = at.dataframe[0].value
    np.testing.assert_allclose(grid.to_numpy(), np.round(share, 3), atol=1e-9)
    assert list(grid.index) == ["layer 1", "layer 2"] and list(grid.columns) == ["head 1", "head 2"]
    layer, head = np.unravel_index(np.argmax(share), share.shape)
    md = _md(at)
    assert f"the head with the most weight on token 1 is layer {layer + 1} · head {head + 1}, a mean of " in md
    assert f"a mean of {share[layer, head]:.2f} over queries 2 to 24" in md
    chance = np.mean([1 / (t + 1) for t in range(1, 24)])
    assert f"would put {chance:.2f} there" in md
    if share.max() < 0.5:  # honest: on the shipped model the sink is weak, and the page says so
        assert "No head puts 0.5 or more there: on this model and text the sink is weak" in md
    rows = at.dataframe[1].value
    A = ENGINE.run(ids).weights[layer, head]
    np.testing.assert_allclose(rows["on token 1"], np.round(A[:, 0], 3))
    # where it parks: queries whose token is new (nothing to copy) against those whose token came before
    seen = [ids[t] in ids[:t] for t in range(1, 24)]
    new = np.mean([A[t + 1, 0] for t, s in enumerate(seen) if not s])
    old = np.mean([A[t + 1, 0] for t, s in enumerate(seen) if s])
    assert f"it puts a mean {new:.2f} on token 1; on the queries whose token did occur before (12), {old:.2f}" in md


def test_value_norms_on_a_server_gpt2_against_transformers(gpt2, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    import torch

    folder, model = gpt2
    monkeypatch.setenv("ATTENTION_MODELS", f"tiny={folder}")
    at = app("first_token")
    at = at.selectbox(key="inside.w.model").set_value("server:tiny").run()
    no_exception(at)
    ids = list(session(at).inside.ids)
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    weights = np.stack([a[0].numpy() for a in out.attentions])  # (L, H, n, n)
    share = _naive_share(weights)
    np.testing.assert_allclose(at.dataframe[0].value.to_numpy(), np.round(share, 3), atol=1.5e-3)
    layer, head = (int(k) for k in np.unravel_index(np.argmax(share), share.shape))
    assert f"is layer {layer + 1} · head {head + 1}, a mean of {share[layer, head]:.2f}" in _md(at)
    block = model.transformer.h[layer]
    d, H = model.config.n_embd, model.config.n_head
    dh = d // H
    with torch.no_grad():
        qkv = block.attn.c_attn(block.ln_1(out.hidden_states[layer][0])).numpy()  # (n, 3d): transformers' own
    v = qkv[:, 2 * d + head * dh : 2 * d + (head + 1) * dh]  # (n, d_head)
    W_o = block.attn.c_proj.weight.detach().numpy()[head * dh : (head + 1) * dh]  # (d_head, d)
    norms, through = np.linalg.norm(v, axis=1), np.linalg.norm(v @ W_o, axis=1)
    np.testing.assert_allclose(at.dataframe[1].value["‖v‖"], np.round(norms, 3), atol=1.5e-3)
    md = _md(at)
    median = np.median(norms[1:])
    assert f"Token 1's value vector has norm {norms[0]:.2f}; the other tokens' median is {median:.2f}" in md
    assert f"what it writes into the stream: {through[0]:.2f} against a median of {np.median(through[1:]):.2f}" in md
    small = norms[0] < 0.5 * np.median(norms[1:])
    assert ("So token 1's value is small" in md) == small and ("Token 1's value is not small here" in md) != small


def test_the_page_follows_the_text_and_ablations_of_every_head() -> None:
    at = journey("every_head")
    at = at.text_input(key="inside.w.typed").input("ba be bi bo ba be bi bo").run()
    at = head_button(at, "toggle", 1, 0).click().run()
    at = goto(at, "first_token")
    no_exception(at)
    assert session(at).inside.ids == (0, 1, 2, 3, 0, 1, 2, 3)
    from attention.model import ablate

    share = _naive_share(ENGINE.run([0, 1, 2, 3, 0, 1, 2, 3], [ablate(1, 0, "zero")]).weights)
    np.testing.assert_allclose(at.dataframe[0].value.to_numpy(), np.round(share, 3), atol=1e-9)
    assert "Measured with the heads ablated on the Every head page: layer 2 · head 1 (zero)." in texts(at.caption)
    assert re.search(r"8 tokens, token 1 is “ba”", _md(at))
