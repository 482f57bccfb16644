"""Cross-attention on every step page: a source sentence (Tokens page, or ``src`` in a link) makes the session's trace
queries from the sentence × keys and values from the source. Values are checked against a naive loop and against
attention.cross_attention, labels against the two sentences; the masks that cannot apply are said in the sidebar."""

from __future__ import annotations

import csv
import gc
import io
import math

import numpy as np
import pytest

import attention
from attention.ui.core.source import source_rows
from tests.helpers.apptest import PAGES, app, drawn_cells, goto, journey, no_exception, open_views, session, texts

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SOURCE = "le chat cat assis sur"
LINK = {"preset": "the_cat_sat", "src": SOURCE}
QUERIES = ["The", "cat", "sat"]
KEYS = SOURCE.split()


def naive(s, causal: bool = False) -> dict[str, np.ndarray]:
    """Single-head cross-attention by loops: q_i·k_j × 1/√d_k, (top-left causal: j > i masked), softmax, Σ w_ij v_j."""
    X, X_kv = np.asarray(s.matrices["X"]), source_rows(s, s.source)
    Q, K, V = X @ s.matrices["W_q"], X_kv @ s.matrices["W_k"], X_kv @ s.matrices["W_v"]
    L, S, d = len(X), len(X_kv), Q.shape[1]
    scores = np.array([[sum(Q[i, c] * K[j, c] for c in range(d)) for j in range(S)] for i in range(L)])
    scaled = np.array(
        [[-math.inf if causal and j > i else scores[i, j] / math.sqrt(d) for j in range(S)] for i in range(L)]
    )
    weights = np.zeros((L, S))
    for i in range(L):
        top = max(scaled[i])
        exps = [math.exp(v - top) if v != -math.inf else 0.0 for v in scaled[i]]
        weights[i] = [e / sum(exps) for e in exps]
    output = np.array([[sum(weights[i, j] * V[j, c] for j in range(S)) for c in range(V.shape[1])] for i in range(L)])
    return {"scores": scores, "scaled": scaled, "weights": weights, "output": output, "K": K, "V": V}


def frame(at, rows: list[str], cols: list[str]):
    """The first dataframe with exactly these row and column labels (the page's views and tables opened first when
    none is drawn)."""
    found = [df.value for df in at.dataframe if list(df.value.index) == rows and list(df.value.columns) == cols]
    if not found:
        at = open_views(at)
        found = [df.value for df in at.dataframe if list(df.value.index) == rows and list(df.value.columns) == cols]
    assert found, [(list(d.value.index), list(d.value.columns)) for d in at.dataframe]
    return found[0]


def downloaded(at, label: str) -> list[list[str]]:
    """The rows of the CSV a download button of the page holds (read from AppTest's in-memory media store)."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    if not any(b.proto.label == label for b in at.get("download_button")):
        at = open_views(at, "downloads")  # the page's downloads, opened
    for _ in range(3):  # Streamlit drops a run's files once later runs end: a fresh run makes the file again
        button = next(b for b in at.get("download_button") if b.proto.label == label)
        file_id = button.proto.url.rsplit("/", 1)[-1].split(".")[0]
        for store in (o for o in gc.get_objects() if isinstance(o, MemoryMediaFileStorage)):
            try:
                data = store.get_file(file_id).content
            except Exception:  # another test's store
                continue
            return list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
        at = at.run()
    raise AssertionError(f"{label}: no file {file_id}")


@pytest.mark.parametrize(
    ("page", "name", "csv_name"),
    [
        ("scores", "scores", "scores"),
        ("scaling", "scaled", "scaled"),
        ("softmax", "weights", "weights"),
        ("output", "weights", "output"),
    ],
)
def test_every_step_page_shows_queries_by_source_keys_with_the_naive_loops_numbers(page, name, csv_name):
    at = app(page, LINK)
    no_exception(at)
    s = session(at)
    assert s.source == tuple(KEYS)
    want = naive(s)
    shown = frame(at, QUERIES, KEYS)  # 3 × 5: rows the sentence, columns the source
    assert np.allclose(shown.to_numpy(float), want[name], rtol=1e-12, atol=1e-12)
    spec = str(at.get("vega_lite_chart")[0].proto.spec)  # the heatmap's keys are the source's words
    assert all(f'"{w}"' in spec for w in ("le", "chat", "assis", "sur"))
    rows = downloaded(at, f"Download {csv_name}.csv")
    header = ["token", "v1", "v2", "v3", "v4"] if csv_name == "output" else ["query \\ key", *KEYS]
    assert rows[0] == header and [r[0] for r in rows[1:]] == QUERIES
    assert np.allclose(np.array([r[1:] for r in rows[1:]], float), want[csv_name], rtol=1e-12)
    assert any("Cross-attention: queries from the sentence (3 tokens)" in t for t in texts(at.sidebar.info))


def test_output_page_shows_the_source_values_and_the_output_of_cross_attention():
    at = app("output", LINK)
    no_exception(at)
    s = session(at)
    want, engine = (
        naive(s),
        attention.cross_attention(
            s.matrices["X"], source_rows(s, s.source), s.matrices["W_q"], s.matrices["W_k"], s.matrices["W_v"]
        ),
    )
    assert np.allclose(engine.output, want["output"], rtol=1e-12)
    assert np.allclose(frame(at, QUERIES, ["v1", "v2", "v3", "v4"]).to_numpy(float), want["output"], rtol=1e-12)
    assert np.allclose(frame(at, KEYS, ["v1", "v2", "v3", "v4"]).to_numpy(float), want["V"], rtol=1e-12)
    assert "V[le]" in " ".join(m.value for m in at.markdown)  # the explanation mixes the source's value rows


def test_reading_page_names_source_tokens_as_the_keys_attended_to():
    at = app("reading", LINK)
    no_exception(at)
    want = naive(session(at))["weights"]
    table = next(df.value for df in at.dataframe if "attends most to" in df.value.columns)
    assert list(table["token"]) == QUERIES
    assert list(table["attends most to"]) == [KEYS[j] for j in want.argmax(axis=1)]
    assert np.allclose(table["weight"].to_numpy(float), want.max(axis=1), rtol=1e-12)
    at = app("softmax", LINK)  # its explanation reads row 1
    assert f"Row 1: **The** attends most to **{KEYS[int(want[0].argmax())]}**" in " ".join(m.value for m in at.markdown)


def test_explain_a_cell_takes_a_source_key():
    at = open_views(app("softmax", {**LINK, "digits": "6"}), "view.explain_cell")  # explained at the digits set
    no_exception(at)
    key_box = at.selectbox(key="cell.softmax.k")
    assert list(key_box.options) == KEYS and list(at.selectbox(key="cell.softmax.q").options) == QUERIES
    at = at.selectbox(key="cell.softmax.q").set_value("sat").run()
    at = at.selectbox(key="cell.softmax.k").set_value("assis").run()
    no_exception(at)
    s = session(at)
    assert s.cell == (2, 3)
    want = naive(s)["weights"][2, 3]
    table = next(df.value for df in at.dataframe if "k (assis)" in df.value.columns)
    assert "q (sat)" in table.columns
    assert f"**{want:.6g}**" in " ".join(m.value for m in at.markdown)


def test_a_causal_mask_is_top_left_aligned_and_padding_is_left_out_with_a_message():
    at = app("softmax", {**LINK, "mask": "causal"})
    no_exception(at)
    s = session(at)
    want = naive(s, causal=True)["weights"]
    assert np.allclose(frame(at, QUERIES, KEYS).to_numpy(float), want, rtol=1e-12, atol=1e-15)
    assert np.all(want[0, 1:] == 0) and np.all(want[2, 3:] == 0)  # query i sees source keys 0..i
    assert any("top-left aligned" in t for t in texts(at.sidebar.info))
    at = app("softmax", {**LINK, "mask": "padding", "pad": "2"})
    no_exception(at)
    assert not at.error
    assert any("padding mask belongs to the first sentence" in t for t in texts(at.sidebar.info))
    assert np.allclose(frame(at, QUERIES, KEYS).to_numpy(float), naive(session(at))["weights"], rtol=1e-12)


def test_grouped_heads_with_a_source_stack_each_head_queries_by_source_keys():
    at = app("softmax", {**LINK, "heads": "2", "kv": "1"})
    no_exception(at)
    s = session(at)
    t = attention.cross_attention(
        s.matrices["X"], source_rows(s, s.source), s.matrices["W_q"], s.matrices["W_k"], s.matrices["W_v"], s.options
    )
    rows = [f"head {h} · {q}" for h in (1, 2) for q in QUERIES]
    assert np.allclose(frame(at, rows, KEYS).to_numpy(float), t.weights.reshape(6, 5), rtol=1e-12)


def test_clearing_the_source_brings_self_attention_back():
    at = journey("tokens", LINK)
    box = next(t for t in at.text_input if t.label.startswith("Source sentence for cross-attention"))
    at = box.input("").run()
    no_exception(at)
    at = goto(at, "softmax")
    no_exception(at)
    assert session(at).source == ()
    frame(at, QUERIES, QUERIES)
    assert not any("Cross-attention" in t for t in texts(at.sidebar.info))


def test_the_source_sentence_travels_in_a_saved_preset_file_and_comes_back_through_the_uploader():
    from attention.ui.core import session as ui_session
    from tests.helpers.apptest import open_expander

    at = app("softmax", LINK)
    s = session(at)
    preset = ui_session.export_preset(s)
    assert preset.source_tokens == tuple(KEYS)
    weights = frame(at, QUERIES, KEYS).to_numpy(float)
    at2 = journey("weights", {"preset": "i_am_batman"})
    at2 = (
        open_expander(at2, "io")
        .file_uploader(key="io.preset.file")
        .set_value(("crossed.json", preset.to_json().encode(), "application/json"))
        .run()
    )
    no_exception(at2)
    s2 = session(at2)
    assert s2.source == tuple(KEYS) and s2.tokens == tuple(QUERIES)
    at2 = goto(at2, "softmax")
    no_exception(at2)
    np.testing.assert_array_equal(frame(at2, QUERIES, KEYS).to_numpy(float), weights)
    assert ui_session.export_preset(session(at2)).source_tokens == tuple(KEYS)  # unedited file: the file itself


HARD = {
    "preset": "she_likes_coffee",
    "src": "elle aime le café noir",
    "heads": "2",
    "kv": "1",
    "mask": "causal+window",
    "win": "2",
    "pos": "alibi",
}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_page_draws_with_a_source_and_grouped_heads_alibi_and_a_window(page):
    at = app(page, HARD)
    no_exception(at)
    assert not at.error, texts(at.error)


def test_the_flash_lab_tiles_queries_by_source_keys():
    at = app("flash", LINK)
    no_exception(at)
    cells = [r for c in at.get("vega_lite_chart") for rows in drawn_cells(c) for r in rows if "walked" in r]
    assert {r["key"] for r in cells} == set(KEYS) and {r["query"] for r in cells} == set(QUERIES)
    assert len(cells) == 15  # 3 queries × 5 source keys


def test_the_zip_download_has_source_labelled_csvs_and_a_preset_that_rebuilds_them():
    import zipfile

    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    at = open_views(app("scores", LINK), "downloads")
    button = next(b for b in at.get("download_button") if b.proto.label.startswith("Download everything"))
    file_id = button.proto.url.rsplit("/", 1)[-1].split(".")[0]
    data = None
    for store in (o for o in gc.get_objects() if isinstance(o, MemoryMediaFileStorage)):
        try:
            data = store.get_file(file_id).content
            break
        except Exception:
            continue
    assert data is not None
    z = zipfile.ZipFile(io.BytesIO(data))
    rows = list(csv.reader(io.StringIO(z.read("weights.csv").decode("utf-8-sig"))))
    assert rows[0] == ["query \\ key", *KEYS]
    k_rows = list(csv.reader(io.StringIO(z.read("K.csv").decode("utf-8-sig"))))
    assert [r[0] for r in k_rows[1:]] == KEYS
    assert (
        "cross-attention" in z.read("README.txt").decode()
        and "le, chat, cat, assis, sur" in z.read("README.txt").decode()
    )
    preset = attention.parse_preset(z.read("preset.json"))
    assert preset.source_tokens == tuple(KEYS)
    want = naive(session(at))["weights"]
    np.testing.assert_allclose(np.array([r[1:] for r in rows[1:]], float), want, rtol=1e-12)
    np.testing.assert_allclose(preset.compute().weights, want, rtol=1e-12)


def test_compare_with_a_pinned_self_attention_state_says_to_clear_the_source():
    at = journey("softmax", {"preset": "the_cat_sat"})
    at = at.button(key="cmp.pin").click().run()
    assert "Compare weights with A" in " ".join(texts(at.markdown))
    at = journey("tokens", {"preset": "the_cat_sat"})
    at = at.button(key="cmp.pin").click().run()
    box = next(t for t in at.text_input if t.label.startswith("Source sentence for cross-attention"))
    at = goto(box.input(SOURCE).run(), "softmax")
    no_exception(at)
    assert any("clear the source sentence to compare" in t for t in texts(at.caption))
    assert "Compare weights with A" not in " ".join(texts(at.markdown))
