"""The family's controls in the app: key/value heads (divisors only), the window, ALiBi among positions, their
messages on bad values, links that carry them bit for bit, and the Q·K·V page's sharing and KV cache."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attention
from attention.ui.address import url
from tests.helpers.apptest import (
    app,
    conventions,
    drawn_cells,
    goto,
    journey,
    no_exception,
    open_views,
    session,
    texts,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def box(at, label: str):
    """The main area's number box with this label."""
    return next(b for b in at.main.number_input if b.label == label)


def heads4(page: str = "qkv"):
    """The default preset, 4 heads, conventions and the page's views open."""
    at = conventions(journey(page))
    at = at.selectbox(key="sb.heads").set_value(4).run()
    no_exception(at)
    assert session(at).options.heads == 4
    return open_views(at)


def test_key_value_heads_offer_only_divisors_and_regroup_w_k_and_w_v():
    at = heads4()
    box = at.selectbox(key="sb.kv_heads")
    assert list(box.options) == ["1", "2", "4"] and not box.disabled
    assert any("Only divisors of the 4 head(s)" in c.value for c in at.sidebar.caption)
    s = session(at)
    W_k, W_v = s.matrices["W_k"].copy(), s.matrices["W_v"].copy()
    dk = W_k.shape[1] // 4
    at = at.selectbox(key="sb.kv_heads").set_value(2).run()
    no_exception(at)
    s = session(at)
    assert s.options.kv_heads == 2 and s.matrices["W_k"].shape[1] == 2 * dk
    # each shared block is the mean of the blocks of the two heads it serves (the GQA paper's conversion)
    assert np.allclose(s.matrices["W_k"][:, :dk], (W_k[:, :dk] + W_k[:, dk : 2 * dk]) / 2)
    t = attention.self_attention(*(s.matrices[n] for n in ("X", "W_q", "W_k", "W_v")), options=s.options)
    assert t.K.shape[1] == 2 * dk
    assert any("W_k and W_v now have 2 block(s)" in m for m in texts(at.sidebar.info))
    assert any("grouped-query attention" in c.value for c in at.sidebar.caption)
    # back to 4: copies, so W_k is the two shared blocks each twice
    at = at.selectbox(key="sb.kv_heads").set_value(4).run()
    s = session(at)
    assert s.options.kv_heads is None and s.matrices["W_k"].shape == W_k.shape
    assert np.array_equal(s.matrices["W_k"][:, :dk], s.matrices["W_k"][:, dk : 2 * dk])
    assert W_v.shape == s.matrices["W_v"].shape


def _output(s) -> np.ndarray:
    return attention.self_attention(*(s.matrices[n] for n in ("X", "W_q", "W_k", "W_v")), options=s.options).output


def test_growing_key_value_heads_says_nothing_changes_only_when_the_output_is_unchanged():
    """6 heads: 2 -> 3 key/value heads mixes blocks (the output moves), 3 -> 6 copies them (it does not)."""
    at = conventions(journey("qkv", {"preset": "the_cat_sat", "dk": "12", "dv": "12", "heads": "6", "kv": "2"}))
    no_exception(at)
    s = session(at)
    assert (s.options.heads, s.options.kv) == (6, 2)
    for g in (3, 6):
        before = _output(s)
        at = at.selectbox(key="sb.kv_heads").set_value(g).run()
        no_exception(at)
        s = session(at)
        assert s.options.kv == g
        said = " ".join(texts(at.sidebar.info))
        unchanged = np.array_equal(_output(s), before)
        assert unchanged == (g == 6), g
        assert ("nothing changes" in said) == unchanged and ("so the numbers change" in said) == (not unchanged), said


def test_qkv_page_shows_which_query_heads_share_each_block_and_the_kv_cache():
    at = heads4()
    at = at.selectbox(key="sb.kv_heads").set_value(1).run()
    no_exception(at)
    md = " ".join(m.value for m in at.markdown)
    assert "multi-query" in md.lower()
    frames = [df.value for df in at.dataframe]
    sharing = [f for f in frames if "key/value block" in f.columns]
    assert sharing and list(sharing[0]["query heads"]) == ["1, 2, 3, 4"]
    cache = [f for f in frames if "bytes per token" in f.columns]
    assert cache, "the KV cache table is shown"
    at = box(at, "Layers").set_value(32).run()
    no_exception(at)
    cache = [df.value for df in at.dataframe if "bytes per token" in df.value.columns][0]
    d = session(at).dims
    per = {r["attention"]: r["bytes per token"] for _, r in cache.iterrows()}
    assert per["MHA"] == 2 * 32 * 4 * (d.d_k // 4) * 2  # K and V, 32 layers, 4 heads of d_k/4, float16
    assert per["MQA"] == 2 * 32 * 1 * (d.d_k // 4) * 2


def test_the_kv_cache_counts_values_d_v_wide_when_d_v_differs_from_d_k():
    at = conventions(journey("qkv", {"preset": "the_cat_sat", "dk": "8", "dv": "12", "heads": "4", "kv": "2"}))
    at = open_views(at)  # the KV cache's view
    no_exception(at)
    d = session(at).dims
    assert (d.d_k, d.d_v) == (8, 12)
    at = box(at, "Layers").set_value(32).run()
    no_exception(at)
    cache = [df.value for df in at.dataframe if "bytes per token" in df.value.columns][0]
    per = {r["attention"]: r["bytes per token"] for _, r in cache.iterrows()}
    for label, g in (("MHA", 4), ("yours", 2), ("MQA", 1)):
        naive = sum((8 // 4) * 2 + (12 // 4) * 2 for _layer in range(32) for _kv in range(g))  # a key and a value
        assert per[label] == naive, (label, per)


def test_bad_kv_cache_sizes_say_what_is_wrong_and_keep_the_value():
    at = heads4()
    at = box(at, "Layers").set_value(0).run()
    no_exception(at)
    assert any(
        "Layers must be a whole number from 1 to 10,000; 0 was not applied and Layers stays 1" in e
        for e in texts(at.error)
    )
    assert box(at, "Layers").value == 1
    at = box(at, "Key/value heads").set_value(5).run()
    assert any("kv_heads must divide heads = 32" in e for e in texts(at.error))


def test_window_box_appears_with_the_window_mask_and_refuses_bad_values():
    at = conventions(journey("scaling"))
    at = at.selectbox(key="sb.mask").set_value("window").run()
    no_exception(at)
    s = session(at)
    assert s.options.mask == ("window",) and s.options.window == 3
    boxes = [b for b in at.sidebar.number_input if b.key.startswith("sb.window.")]
    assert len(boxes) == 1 and boxes[0].value == 3
    at = boxes[0].set_value(2).run()
    no_exception(at)
    s = session(at)
    n = len(s.tokens)
    t = attention.self_attention(*(s.matrices[k] for k in ("X", "W_q", "W_k", "W_v")), options=s.options)
    assert s.options.window == 2
    assert np.array_equal(t.allowed, np.array([[0 <= i - j < 2 for j in range(n)] for i in range(n)]))
    box = next(b for b in at.sidebar.number_input if b.key.startswith("sb.window."))
    at = box.set_value(0).run()
    no_exception(at)
    assert session(at).options.window == 2
    assert any(
        "Window w must be a whole number from 1 to 2,048; 0 was not applied and Window w stays 2" in e
        for e in texts(at.sidebar.error)
    )
    box = next(b for b in at.sidebar.number_input if b.key.startswith("sb.window."))
    assert box.value == 2


def test_alibi_is_among_the_positions_in_the_sidebar_and_on_the_tokens_page():
    at = conventions(journey("tokens"))
    assert "ALiBi" in at.selectbox(key="sb.positions").options  # short in the sidebar, long on the Tokens page
    assert "ALiBi (a distance penalty per head on the scores)" in at.selectbox(key="tok.positions").options
    at = at.selectbox(key="sb.positions").set_value("alibi").run()
    no_exception(at)
    assert session(at).options.positions == "alibi"
    assert at.selectbox(key="tok.positions").value == "alibi"
    at = goto(at, "scaling")
    no_exception(at)


def test_a_link_carries_kv_heads_window_and_alibi_bit_for_bit():
    at = heads4()
    at = at.selectbox(key="sb.kv_heads").set_value(2).run()
    at = at.selectbox(key="sb.mask").set_value("causal+window").run()
    at = next(b for b in at.sidebar.number_input if b.key.startswith("sb.window.")).set_value(4).run()
    at = at.selectbox(key="sb.positions").set_value("alibi").run()
    no_exception(at)
    s = session(at)
    q, notes = url.link(s)
    assert q["kv"] == "2" and q["win"] == "4" and q["pos"] == "alibi" and not notes
    again = app("qkv", q)
    no_exception(again)
    r = session(again)
    assert r.options.replace(padding=()) == s.options.replace(padding=())  # all-False flags are not written
    for name in ("X", "W_q", "W_k", "W_v"):
        assert np.array_equal(r.matrices[name], s.matrices[name]), name


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ({"heads": "4", "kv": "3"}, "key/value heads “3” do not divide the 4 heads"),
        ({"kv": "<b>x</b>"}, "key/value heads"),
        ({"mask": "window", "win": "0"}, "window “0” is not a whole number from 1 to 2048"),
        ({"mask": "window", "win": "9" * 40}, "is not a whole number from 1 to 2048"),
    ],
)
def test_bad_family_values_in_a_link_end_in_notices(query, needle):
    at = app("qkv", query)
    no_exception(at)
    shown_text = " ".join(texts(at.warning))
    assert needle in shown_text
    assert "<b>" not in " ".join(w.value for w in at.warning)


# ---------------------------------------------------------------- the FlashAttention lab


def button(at, label: str):
    return next(b for b in at.button if b.label == label)


def naive_online_softmax(scores: np.ndarray, V: np.ndarray, b: int) -> list[dict]:
    """FlashAttention's walk written out with plain loops, one row at a time: query blocks outer, key blocks inner;
    per tile and row the running max before and after, the rescale exp(m_old − m_new), ℓ and acc / ℓ."""
    n, S = scores.shape
    tiles = []
    for r0 in range(0, n, b):
        rows = range(r0, min(r0 + b, n))
        m = {i: -np.inf for i in rows}
        ell = {i: 0.0 for i in rows}
        acc = {i: np.zeros(V.shape[1]) for i in rows}
        for c0 in range(0, S, b):
            c1 = min(c0 + b, S)
            tile = {"rows": (r0, rows[-1] + 1), "cols": (c0, c1), "m before": [], "m after": [], "rescale": []}
            tile.update({"ℓ": [], "partial": []})
            for i in rows:
                m_new = max([m[i]] + [float(z) for z in scores[i, c0:c1]])
                r = 1.0 if m_new == -np.inf else math.exp(m[i] - m_new)  # exp(−inf) = 0: nothing summed yet
                p = [0.0 if m_new == -np.inf else math.exp(float(z) - m_new) for z in scores[i, c0:c1]]
                ell_new = r * ell[i] + sum(p)
                acc[i] = r * acc[i] + sum(pj * V[c0 + j] for j, pj in enumerate(p))
                for name, v in (("m before", m[i]), ("m after", m_new), ("rescale", r), ("ℓ", ell_new)):
                    tile[name].append(v)
                tile["partial"].append(acc[i] / ell_new if ell_new > 0 else np.zeros(V.shape[1]))
                m[i], ell[i] = m_new, ell_new
            tiles.append(tile)
    return tiles


def check_tile(at, scores: np.ndarray, V: np.ndarray, b: int, k: int) -> None:
    """The page's row table for tile k equals the naive walk's, cell by cell, and its chart marks the tiles before
    k done, tile k "this tile" and the rest "ahead", with each cell's score."""
    want = naive_online_softmax(scores, V, b)[k]
    labels = list(session(at).labels)
    row = [df.value for df in at.dataframe if "ℓ" in df.value.columns][0]
    assert list(row.index) == labels[want["rows"][0] : want["rows"][1]]
    for col, name in (("m before", "m before"), ("m after", "m after"), ("rescale exp(m_old − m_new)", "rescale")):
        assert np.allclose(row[col].to_numpy(dtype=float), want[name], rtol=1e-12, atol=0), col
    assert np.allclose(row["ℓ"].to_numpy(dtype=float), want["ℓ"], rtol=1e-12, atol=0)
    partial = np.array(want["partial"])
    for c in range(min(8, V.shape[1])):
        assert np.allclose(row[f"output v{c + 1}"].to_numpy(dtype=float), partial[:, c], rtol=1e-12, atol=1e-15)
    n, S = scores.shape
    key_blocks = -(-S // b)
    cells = [r for c in at.get("vega_lite_chart") for rows in drawn_cells(c) for r in rows if "walked" in r]
    assert len(cells) == min(n, 64) * min(S, 64)
    for cell in cells:
        i, j = labels.index(cell["query"]), labels.index(cell["key"])
        idx = (i // b) * key_blocks + j // b
        assert cell["walked"] == ("done" if idx < k else "this tile" if idx == k else "ahead"), cell
        if np.isfinite(scores[i, j]):
            assert cell["score"] == pytest.approx(scores[i, j], rel=1e-12)
        else:
            assert cell["masked"] and (cell["score"] is None or not np.isfinite(cell["score"]))


def test_flash_lab_walks_every_tile_to_the_last_and_matches_the_full_softmax():
    at = app("flash", {"preset": "the_cat_sat"})
    no_exception(at)
    s = session(at)
    n = len(s.tokens)
    t = attention.self_attention(*(s.matrices[k] for k in ("X", "W_q", "W_k", "W_v")), options=s.options)
    scores = t.scaled / float(s.options.temperature)  # (n, n): what the tiles see
    total = (-(-n // 2)) ** 2  # tile size 2
    assert any(f"Tile 1 of {total}" in m.value for m in at.markdown)
    check_tile(at, scores, t.V, 2, 0)
    at = button(at, "Next tile").click().run()
    no_exception(at)
    assert any(f"Tile 2 of {total}" in m.value for m in at.markdown)
    check_tile(at, scores, t.V, 2, 1)
    at = button(at, "Last tile").click().run()
    no_exception(at)
    md = " ".join(m.value for m in at.markdown)
    assert f"Tile {total} of {total}" in md and "its output is final" in md
    check_tile(at, scores, t.V, 2, total - 1)
    walked = naive_online_softmax(scores, t.V, 2)
    finals = np.concatenate([np.array(x["partial"]) for x in walked if x["cols"][1] == n])  # each row block's last
    assert np.allclose(finals, t.output, rtol=1e-12, atol=1e-15)  # the naive walk is the full softmax
    assert "equal to float64 rounding" in md
    assert button(at, "Last tile").disabled
    memory = [df.value for df in at.dataframe if "full n × n scores" in df.value.columns][0]
    assert len(memory) == 2
    at = box(at, "Tile size").set_value(1).run()
    walked = naive_online_softmax(scores, t.V, 1)
    k = next(i for i, x in enumerate(walked) if any(0 < r < 1 for r in x["rescale"]))  # a tile that raises m
    at = next(sl for sl in at.slider if sl.label == "Tile").set_value(k + 1).run()
    no_exception(at)
    check_tile(at, scores, t.V, 1, k)


def _kept(trace, b: int) -> int:
    """What the lab's tiled run of head 1 keeps, counted array by array (every tile keeps its own)."""
    f = attention.flash.from_trace(trace, b, b, head=0)
    return sum(a.size for x in f.tiles for a in (x.scores, x.p, x.acc, x.partial, x.m_old, x.m_new, x.rescale, x.l))


def test_flash_lab_bounds_what_the_tiles_keep_and_names_a_tile_size_that_fits(monkeypatch):
    from attention.ui.labpages import flash as lab

    at = app("flash", {"preset": "the_cat_sat"})
    s = session(at)
    t = attention.self_attention(*(s.matrices[k] for k in ("X", "W_q", "W_k", "W_v")), options=s.options)
    monkeypatch.setattr(lab, "MAX_KEPT", _kept(t, 2) - 1)  # tiles of 2 keep one number too many
    least = next(c for c in range(3, 100) if _kept(t, c) <= lab.MAX_KEPT)
    at = button(at, "Next tile").click().run()
    no_exception(at)
    warned = " ".join(texts(at.warning))
    assert f"which keep {_kept(t, 2):,} numbers" in warned and f"Choose a tile size of at least {least}." in warned
    assert not [m for m in at.markdown if "Tile 1 of" in m.value] and not at.get("vega_lite_chart")
    at = box(at, "Tile size").set_value(least).run()
    no_exception(at)
    assert not at.warning and any("Tile 1 of" in m.value for m in at.markdown)


def test_flash_lab_tiles_once_per_state_head_and_size_and_walks_from_the_cache(monkeypatch):
    from attention import flash
    from attention.ui.labpages import flash as lab

    calls = []
    real = flash.from_trace
    monkeypatch.setattr(flash, "from_trace", lambda *a, **k: calls.append(k) or real(*a, **k))
    lab.FLASHES.clear()
    at = app("flash", {"preset": "the_cat_sat"})
    for _ in range(3):
        at = button(at, "Next tile").click().run()
        no_exception(at)
    assert any("Tile 4 of" in m.value for m in at.markdown)
    assert calls == [{"head": 0}]  # one head tiled, once
    at = box(at, "Tile size").set_value(3).run()
    assert len(calls) == 2


def test_flash_lab_tile_size_and_bad_values():
    at = app("flash", {"preset": "the_cat_sat"})
    at = box(at, "Tile size").set_value(3).run()
    no_exception(at)
    n = len(session(at).tokens)
    assert any(f"Tile 1 of {(-(-n // 3)) ** 2}" in m.value for m in at.markdown)
    at = box(at, "Tile size").set_value(0).run()
    no_exception(at)
    assert any(
        "Tile size must be a whole number from 1 to 2,048; 0 was not applied and Tile size stays 3" in e
        for e in texts(at.error)
    )
    at = box(at, "Sequence length n").set_value(10**12).run()
    assert any("Sequence length n must be a whole number" in e for e in texts(at.error))
    at = box(at, "Sequence length n").set_value(131072).run()
    memory = [df.value for df in at.dataframe if "full n × n scores" in df.value.columns][0]
    assert "131,072" in memory["for"].iloc[1]


def test_flash_lab_with_grouped_heads_alibi_and_a_window_matches_the_full_path():
    at = heads4("flash")
    at = at.selectbox(key="sb.kv_heads").set_value(2).run()
    at = at.selectbox(key="sb.mask").set_value("causal+window").run()
    at = at.selectbox(key="sb.positions").set_value("alibi").run()
    no_exception(at)
    heads = [sb for sb in at.selectbox if sb.label == "Head"]
    assert heads and len(heads[0].options) == 4
    at = heads[0].set_value(3).run()
    no_exception(at)
    s = session(at)
    t = attention.self_attention(*(s.matrices[k] for k in ("X", "W_q", "W_k", "W_v")), options=s.options)
    scores = t.scaled[3] / float(s.options.temperature)  # head 4: its scores with its ALiBi bias and the window
    dv = t.V.shape[-1] // 2
    V = t.V[:, dv:]  # head 4 reads the second of the two key/value blocks
    check_tile(at, scores, V, 2, 0)
    at = button(at, "Next tile").click().run()
    check_tile(at, scores, V, 2, 1)
    at = button(at, "Last tile").click().run()
    no_exception(at)
    n = len(s.tokens)
    total = (-(-n // 2)) ** 2
    check_tile(at, scores, V, 2, total - 1)
    walked = naive_online_softmax(scores, V, 2)
    finals = np.concatenate([np.array(x["partial"]) for x in walked if x["cols"][1] == n])
    assert np.allclose(finals, t.concat[:, 3 * dv : 4 * dv], rtol=1e-12, atol=1e-15)
    md = " ".join(m.value for m in at.markdown)
    assert "head 4, every row" in md and "equal to float64 rounding" in md


# ---------------------------------------------------------------- cross-attention on the Tokens page


def source_box(at):
    return next(t for t in at.text_input if t.label.startswith("Source sentence for cross-attention"))


def test_a_source_sentence_gives_a_cross_attention_heatmap_of_queries_by_source_keys():
    at = app("tokens", {"preset": "the_cat_sat"})
    no_exception(at)
    at = source_box(at).input("le chat cat assis").run()
    no_exception(at)
    s = session(at)
    from attention.ui.views import cross as crossview

    X_kv = crossview.source_rows(s, ("le", "chat", "cat", "assis"))
    assert X_kv.shape == (4, s.matrices["X"].shape[-1])
    assert np.array_equal(X_kv[2], np.asarray(s.matrices["X"]).reshape(-1, X_kv.shape[1])[s.tokens.index("cat")])
    want = attention.cross_attention(
        np.asarray(s.matrices["X"]).reshape(-1, X_kv.shape[1]),
        X_kv,
        s.matrices["W_q"],
        s.matrices["W_k"],
        s.matrices["W_v"],
        s.options,
    )
    charts = [c for c in at.get("vega_lite_chart") if "Cross-attention weights" in str(c.proto.spec)]
    assert charts, "the cross-attention heatmap is drawn"
    spec = str(charts[0].proto.spec)
    for word in ("le", "chat", "assis"):
        assert word in spec
    out = [df.value for df in at.dataframe if list(df.value.index) == list(s.labels) and df.value.shape[1] <= 16]
    assert any(np.allclose(o.to_numpy(), want.output[:, : o.shape[1]]) for o in out)
    at = source_box(at).input("").run()
    no_exception(at)
    assert not [c for c in at.get("vega_lite_chart") if "Cross-attention weights" in str(c.proto.spec)]


def test_a_bad_source_sentence_is_refused_with_a_message():
    at = app("tokens", {"preset": "the_cat_sat"})
    at = source_box(at).input("ok " + "x" * 500).run()
    no_exception(at)
    assert any("is 500 characters long; at most 200 are allowed" in e for e in texts(at.error))
    at = source_box(at).input("[evil](http://x) " * 3000).run()
    no_exception(at)
    assert any("at most 4,000 characters" in e for e in texts(at.error))


@pytest.mark.parametrize(
    ("page", "label", "name", "good", "bad"),
    [
        ("qkv", "Layers", "layers", 12, 0),
        ("qkv", "Tokens of context", "tokens", 128_000, -5),
        ("qkv", "Bytes per number", "bytes", 4, 9),
        ("qkv", "The model's layers", "m_layers", 80, 10**9),
        ("qkv", "Query heads", "m_heads", 64, 0),
        ("qkv", "Key/value heads", "m_kv", 4, 0),
        ("qkv", "d_head", "m_dhead", 64, 100_000),
        ("flash", "Tile size", "tile", 4, 3000),
        ("flash", "Sequence length n", "flash_n", 1024, 0),
        ("flash", "Head width d", "flash_d", 256, -1),
        ("flash", "Bytes per number", "bytes", 8, 0),
    ],
)
def test_every_family_number_box_applies_a_good_value_and_refuses_a_bad_one(page, label, name, good, bad):
    at = heads4(page) if page == "qkv" else app(page, {"preset": "the_cat_sat"})
    at = box(at, label).set_value(good).run()
    no_exception(at)
    assert at.session_state["family_settings"][name] == good
    assert box(at, label).value == good
    at = box(at, label).set_value(bad).run()
    no_exception(at)
    assert at.session_state["family_settings"][name] == good
    assert any("must be a whole number from" in e and "was not applied" in e for e in texts(at.error))
    assert box(at, label).value == good


def test_flash_lab_first_previous_and_slider_walk_the_tiles():
    at = app("flash", {"preset": "the_cat_sat"})
    at = button(at, "Last tile").click().run()
    total = session_total(at)
    at = button(at, "Previous tile").click().run()
    assert any(f"Tile {total - 1} of {total}" in m.value for m in at.markdown)
    at = next(sl for sl in at.slider if sl.label == "Tile").set_value(2).run()
    no_exception(at)
    assert any(f"Tile 2 of {total}" in m.value for m in at.markdown)
    at = button(at, "First tile").click().run()
    assert any(f"Tile 1 of {total}" in m.value for m in at.markdown)
    assert button(at, "First tile").disabled and button(at, "Previous tile").disabled


def session_total(at) -> int:
    import re

    found = [re.search(r"Tile (\d+) of (\d+)", m.value) for m in at.markdown]
    return int(next(f for f in found if f).group(2))


def test_the_folded_conventions_summary_names_key_value_heads_and_the_window():
    from attention.ui.sidebar.conventions import conventions_summary

    at = heads4()
    at = at.selectbox(key="sb.kv_heads").set_value(2).run()
    at = at.selectbox(key="sb.mask").set_value("causal+window").run()
    summary = conventions_summary(session(at))
    assert summary.startswith("4 heads, 2 key/value · causal+window (w = 3)")


def test_the_source_sentence_travels_in_a_link_and_a_hostile_one_is_refused():
    at = app("tokens", {"preset": "the_cat_sat"})
    at = source_box(at).input("le chat assis").run()
    s = session(at)
    q, notes = url.link(s)
    assert q["src"] == "le chat assis" and not notes
    again = app("tokens", q)
    no_exception(again)
    assert session(again).source == ("le", "chat", "assis")
    assert source_box(again).value == "le chat assis"
    bad = app("tokens", {"preset": "the_cat_sat", "src": "ok " + "<b>" * 100})
    no_exception(bad)
    assert session(bad).source == ()
    assert any("source sentence was not restored" in w for w in texts(bad.warning))


def test_learning_with_grouped_heads_alibi_and_a_window_trains_and_its_weights_are_used():
    at = app("learn", {"preset": "the_cat_sat", "heads": "2", "kv": "1", "pos": "alibi", "mask": "window", "win": "2"})
    no_exception(at)
    s = session(at)
    assert s.options.kv_heads == 1 and s.options.positions == "alibi"
    at = at.button(key="learn.train").click().run()
    no_exception(at)
    assert not any("Error" in e for e in texts(at.exception))
    at = at.button(key="learn.use").click().run()
    no_exception(at)
    s = session(at)
    t = attention.self_attention(*(s.matrices[k] for k in ("X", "W_q", "W_k", "W_v")), options=s.options)
    assert s.matrices["W_k"].shape[1] == 2 and t.weights.shape == (2, 3, 3)
