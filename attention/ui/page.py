"""The step-page frame: set-up, title, formula, explanation, editors, matrices, heatmap, downloads.

Every page file is one call: ``render("scores")``. ``setup()`` is the one guarded entry that every
page (and the overview) runs first, so a page works when opened by URL, after any page switch, and
under AppTest.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from .. import export
from ..errors import AttentionError
from ..shapes import shape_trace
from ..trace import Trace
from . import charts, editors, io_panel, sidebar, state
from .steps import NAV, OVERVIEW, STEPS, as_2d, reading_line, top_keys

ROOT = Path(__file__).resolve().parent.parent.parent
STYLE_MAX_CELLS = 4096  # highlight changed cells with a Styler up to this size
VIEW_ROWS, VIEW_COLS = 64, 64  # matrices larger than this are shown a window at a time


def labels(name: str, s: state.Session, shape: tuple[int, ...]) -> tuple[list[str], list[str]]:
    """Row and column labels of a named matrix (tokens, d1.., k1.., v1..), as the CSVs write them."""
    return export.shape_labels(name, shape, export.token_labels(s.tokens), s.options.projection)


_NAV = threading.local()


def navigation() -> None:
    """Declare the pages (labels that read as the steps) and run the chosen one. Called by the entry
    point; a page that Streamlit runs on its own (a direct URL served from ``pages/`` before any
    session has run the entry point, or AppTest) declares the same navigation in ``setup()``."""
    _NAV.active = True
    try:
        st.navigation(_pages()).run()
    finally:
        _NAV.active = False


def _url_path(path: str) -> str:
    return path.split("_", 1)[1].removesuffix(".py")


def _pages() -> list:
    return [st.Page(ROOT / path, title=label, url_path=_url_path(path), default=(path == OVERVIEW)) for path, label in NAV]


def _in_browser() -> bool:
    """False under AppTest, which runs a page file directly and has no browser behind it."""
    try:
        return st.context.headers.get("Host") is not None
    except Exception:  # noqa: BLE001 - no request context at all
        return False


def setup(title: str, page_file: str) -> state.Session:
    """Page config, session state, sidebar and URL; every page calls this first."""
    if not getattr(_NAV, "active", False):
        # Streamlit ran this page file on its own: a direct URL served from pages/ before any session
        # ran the entry point, or AppTest. Declare the same navigation; in a browser session, switch to
        # this page through it at once, so every later run of the session (and every widget's identity)
        # is the same as when the app is entered through streamlit_app.py.
        pages = _pages()
        st.navigation(pages)
        if _in_browser():
            st.switch_page(pages[[path for path, _ in NAV].index(page_file)], query_params=st.query_params.to_dict())
    st.set_page_config(page_title=f"{title} · Self-attention, step by step", page_icon=str(ROOT / "docs" / "icon.png"), layout="wide")
    s = state.ensure()
    sidebar.draw()
    s = state.get()
    state.sync_query_params(s)
    for note in s.notices:
        st.warning(note)
    s.notices.clear()
    return s


def render(key: str) -> None:
    """Draw one step page."""
    step = STEPS[key]
    s = setup(step.nav, step.file)
    st.title(step.title)
    st.latex(step.latex)
    if step.editors:
        st.markdown(step.explain(s, None))
    if key == "tokens":
        _token_controls(s)
    if key == "weights":
        _dk_control(s)
    for name in step.editors:
        rows, cols = labels(name, s, s.matrices[name].shape)
        editors.matrix_editor(name, rows, cols)
        io_panel.matrix_import(name, rows, cols)
    s = state.get()
    trace = state.current_trace(s)
    ok = isinstance(trace, Trace)
    if not step.editors:
        st.markdown(step.explain(s, trace if ok else None))
    if not ok:
        _show_error(trace)
        if not step.editors:
            return
    else:
        doc_check(s, trace)
    if ok:
        base = state.base_trace(s)
        for name in step.show:
            show_matrix(name, s, trace, base, key)
        if step.heatmap:
            show_heatmap(step.heatmap, s, trace, key)
        if key == "reading":
            show_reading(s, trace)
    for name in step.editors:
        download_button(name, s, key)
    if ok:
        download_all(s, key)


def _show_error(exc: AttentionError) -> None:
    where = {"X": "Tokens & embeddings", "W_q": "Weights", "W_k": "Weights", "W_v": "Weights"}.get(exc.matrix or "", "")
    st.error(exc.message + (f"\n\nFix it on the **{where}** page." if where else ""), icon=":material/error:")


def _token_controls(s: state.Session) -> None:
    c1, c2 = st.columns([3, 1])
    sentence_key = f"tok.sentence.{s.version}"
    if sentence_key not in st.session_state:
        st.session_state[sentence_key] = " ".join(s.tokens)
    text = c1.text_input("Sentence (tokens are split on spaces)", key=sentence_key,
                         help="Add or remove words to change the number of tokens; existing rows of X are kept.")
    tokens = tuple(text.split())
    if text == " ".join(s.tokens):
        pass  # unchanged (tokens that themselves contain spaces, from a preset file, are not re-split)
    elif not tokens:
        c1.error("The sentence is empty: attention needs at least one token. The previous tokens are kept until you type one.")
    elif len(tokens) > state.MAX_TOKENS:
        c1.error(f"{len(tokens)} tokens is more than the {state.MAX_TOKENS} this dashboard supports; the previous tokens are kept.")
    elif tokens != s.tokens:
        if len(tokens) == len(s.tokens):
            s.tokens = tokens
        else:
            state.resize(tokens=tokens)
            st.session_state[f"tok.sentence.{state.get().version}"] = text
            st.rerun()
    dm_key = f"tok.dmodel.{s.version}"
    if dm_key not in st.session_state:
        st.session_state[dm_key] = int(s.matrices["X"].shape[1])
    d_model = c2.number_input("d_model", 1, state.MAX_DIM, key=dm_key, help="Columns of X (and rows of each W). Values that still fit are kept.")
    if d_model != s.matrices["X"].shape[1]:
        state.resize(d_model=int(d_model))
        st.session_state[f"tok.sentence.{state.get().version}"] = text
        st.rerun()
    if s.preset_id == "the_cat_sat_on_the_mat":
        n, d = s.matrices["X"].shape
        steps = {step.step: step for step in shape_trace((1, n, d), state.d_k_of(s))}
        scores, out = steps["scores = Q·Kᵀ"], steps["output = weights·V"]
        st.info(f"Document 003 uses a batch of one: its X has shape (1, {n}, {d}). The dashboard shows and edits its single item, "
                f"({n}, {d}); the engine computes the batch with `@`. The document's `np.dot` on 3-D arrays gives scores of shape "
                f"{scores.np_dot} (every query against every key of every batch item) where `@` gives {scores.matmul}, and its "
                f"output {out.np_dot} where `@` gives {out.matmul} (the document prints (1, 6, 1, 8)).")


def _dk_control(s: state.Session) -> None:
    dk_now = state.d_k_of(s)
    key = f"w.dk.{s.version}.{s.options.projection}"
    if key not in st.session_state:
        st.session_state[key] = dk_now
    dk = st.number_input("d_k (width of Q, K and V)", 1, state.MAX_DIM, key=key, help="Columns of each W; values that still fit are kept.")
    if dk != dk_now:
        state.resize(d_k=int(dk))
        st.rerun()


def _changed(cur: np.ndarray, base: np.ndarray | None) -> np.ndarray | None:
    if base is None or base.shape != cur.shape:
        return None
    same = (cur == base) | (np.isnan(cur) & np.isnan(base))
    return ~same


def _largest_change(cur: np.ndarray, base: np.ndarray, rows_per_chunk: int = 256) -> float | None:
    """Largest finite |cur - base|, a block of rows at a time (no full-size temporaries at n = 2048)."""
    best = None
    with np.errstate(invalid="ignore"):
        for r in range(0, cur.shape[0], rows_per_chunk):
            d = np.abs(cur[r:r + rows_per_chunk] - base[r:r + rows_per_chunk])
            d = d[np.isfinite(d)]
            if d.size:
                best = float(d.max()) if best is None else max(best, float(d.max()))
    return best


def show_matrix(name: str, s: state.Session, trace: Trace, base: Trace | None, page_key: str) -> None:
    """A labelled DataFrame with its shape; cells that differ from the unedited preset are highlighted."""
    full = getattr(trace, name)
    m = as_2d(full)
    rows, cols = labels(name, s, m.shape)
    shape_note = f"shape {m.shape[0]} × {m.shape[1]}" + (f" (the engine's array is {full.shape}, a batch of one)" if full.ndim == 3 else "")
    st.markdown(f"**{name}** · {shape_note}")
    base_m = None if base is None else as_2d(getattr(base, name))
    changed = _changed(m, base_m)
    r0, c0 = editors.window_controls(f"view.{page_key}.{name}", *m.shape, VIEW_ROWS, VIEW_COLS)
    win = m[r0:r0 + VIEW_ROWS, c0:c0 + VIEW_COLS]
    df = pd.DataFrame(win, index=rows[r0:r0 + VIEW_ROWS], columns=cols[c0:c0 + VIEW_COLS])
    if changed is not None and changed.any():
        cw = changed[r0:r0 + VIEW_ROWS, c0:c0 + VIEW_COLS]
        big = _largest_change(m, base_m)
        largest = f"largest change {big:.4g}" if big is not None else "the change is between masked and unmasked cells"
        st.caption(f"{int(changed.sum())} of {changed.size} cells differ from the unedited preset (highlighted); {largest}.")
        if win.size <= STYLE_MAX_CELLS:
            st.dataframe(df.style.apply(lambda _: np.where(cw, "background-color: #fff3b0; font-weight: 600", ""), axis=None).format("{:.8g}"),
                         width="stretch")
        else:
            st.dataframe(df, width="stretch")
    else:
        if changed is None and base is not None:
            st.caption("The shape differs from the unedited preset, so there is nothing to compare cell by cell.")
        st.dataframe(df.style.format("{:.8g}") if win.size <= STYLE_MAX_CELLS else df, width="stretch")
    if m.shape[0] > VIEW_ROWS or m.shape[1] > VIEW_COLS:
        st.caption(f"Showing rows {r0 + 1}–{min(m.shape[0], r0 + VIEW_ROWS)} and columns {c0 + 1}–{min(m.shape[1], c0 + VIEW_COLS)}; "
                   "the CSV has every cell.")
    download_button(name, s, page_key)


def show_heatmap(name: str, s: state.Session, trace: Trace, page_key: str) -> None:
    m = as_2d(getattr(trace, name))
    toks = export.token_labels(s.tokens)
    kind = "weights" if name == "weights" else "scores"
    titles = {"scores": "Raw scores QKᵀ", "scaled": "Scaled scores (masked cells grey)", "weights": "Attention weights (each row sums to 1)"}
    chart = charts.heatmap(m, toks, toks, kind=kind, title=titles[name], allowed=trace.allowed)
    st.altair_chart(chart, width="content")
    n = m.shape[0]
    if n > charts.RECT_MAX:
        pooled = "the largest weight" if kind == "weights" else "the mean score"
        st.caption(f"{n} × {n} is drawn in blocks of tokens (each block shows {pooled} in it; hover for its range and value; "
                   "grey = masked). Choose a window below to read every cell with tooltips.")
        c1, c2, c3 = st.columns(3)
        size = int(c3.selectbox("zoom window (tokens)", [16, 32, 64], index=0, key=f"zoom.{page_key}.size"))
        r0 = int(c1.number_input("first query row", 1, n, 1, key=f"zoom.{page_key}.r0")) - 1
        c0 = int(c2.number_input("first key column", 1, n, 1, key=f"zoom.{page_key}.c0")) - 1
        st.altair_chart(charts.zoom_heatmap(m, toks, toks, r0, c0, size, kind=kind, title=f"rows {r0 + 1}–{min(n, r0 + size)}, "
                                            f"columns {c0 + 1}–{min(n, c0 + size)}", allowed=trace.allowed), width="content")
    if name == "weights":
        lines = [reading_line(trace, s.tokens, i) for i in range(min(n, 8))]
        st.markdown("Reading the rows: " + "; ".join(lines) + ("; …" if n > 8 else "."))


def show_reading(s: state.Session, trace: Trace) -> None:
    w = as_2d(trace.weights)
    top, top_weight, masked = top_keys(trace)
    toks = np.asarray(export.token_labels(s.tokens), dtype=object)
    n, rows = len(toks), np.arange(len(toks))
    rest = w.copy()
    rest[rows, top] = -np.inf
    second = np.argmax(rest, axis=1) if n > 1 else top  # the next key after the top one
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(w > 0, w * np.log2(w), 0.0), axis=1)  # bits; 0 * log 0 counts as 0
    df = pd.DataFrame({
        "token": toks,
        "attends most to": np.where(masked, "(fully masked)", toks[top]),
        "weight": top_weight,
        "then": np.where(masked | (n < 2), "", toks[second]),
        "weight 2": w[rows, second] if n > 1 else np.zeros(n),
        "entropy (bits)": entropy,
        "max possible (bits)": np.full(n, np.log2(n) if n > 1 else 0.0),
        "reading": np.where(masked, "", [f"{a} → {b}" for a, b in zip(toks, toks[top], strict=True)]),
    })
    st.dataframe(df.head(512), width="stretch", hide_index=True)
    if n > 512:
        st.caption(f"First 512 of {n} tokens shown; the CSV has them all.")
    st.download_button("Download reading.csv", data=lambda: export.table_csv(df), file_name=f"{s.preset_id}_reading.csv", mime="text/csv",
                       key=f"dl.reading.{s.version}", on_click="ignore")
    preset = state.preset_for(s)
    note = preset.notes.get("reading") if state.is_unedited(s) else None
    if note:
        st.info(note)


def download_button(name: str, s: state.Session, page_key: str) -> None:
    """A CSV download of one matrix, built when clicked from the session's current numbers.

    The callable holds the (small) session, never the trace: Streamlit keeps a session's deferred
    downloads alive, and a captured n = 2048 trace would pin ~100 MB per session."""
    corner = "token" if name in ("X", "Q", "K", "V", "output") else ("query \\ key" if name in ("scores", "scaled", "weights") else "dim")

    def data() -> bytes:
        m = s.matrices[name] if name in state.MATRICES else as_2d(getattr(state.compute(s.tokens, s.matrices, s.options), name))
        return export.matrix_csv(m, *labels(name, s, m.shape), corner=corner)

    st.download_button(f"Download {name}.csv", data=data, file_name=f"{s.preset_id}_{name}.csv", mime="text/csv",
                       key=f"dl.{page_key}.{name}", on_click="ignore")


def download_all(s: state.Session, page_key: str) -> None:
    def build() -> bytes:
        return export.trace_zip(state.compute(s.tokens, s.matrices, s.options), state.export_preset(s))

    st.download_button("Download everything (.zip: every matrix as CSV + settings as a preset file)", data=build,
                       file_name=f"{s.preset_id}_attention.zip", mime="application/zip", key=f"dl.{page_key}.zip", on_click="ignore")


def doc_check(s: state.Session, trace: Trace) -> None:
    """When the preset is unedited, show whether the numbers match the ones its document prints."""
    preset = state.preset_for(s)
    if not preset.source.get("document"):
        return
    doc = f"{preset.source['document'][:3]} ({preset.source['document']})"
    if not state.is_unedited(s):
        st.caption(f"Edited: the numbers no longer correspond to document {doc}. “Reset to preset” brings them back.")
        return
    if preset.random is not None and preset.seed != preset.random.seed:
        st.caption(f"Seed changed from the document's: its printed numbers apply to seed {preset.random.seed}.")
        return
    ok, detail = state.document_match(s.preset_id, s.seed, s.blank_shape)
    if preset.expected:
        (st.success if ok else st.error)(("✓ Matches" if ok else "✗ Does not match") + f" document {doc}: {detail}")
    elif preset.expected_shapes:
        (st.info if ok else st.error)(("✓ Shapes match" if ok else "✗ Shapes differ from") + f" document {doc}: {detail}")

def render_overview() -> None:
    """The home page: the whole pipeline at a glance with the current shapes, and links to each step."""
    s = setup("Overview", OVERVIEW)
    preset = state.preset_for(s)
    st.title("Self-attention, step by step")
    st.markdown("Every matrix of scaled dot-product attention, computed live from the numbers below. Pick a preset in the sidebar "
                "(the five documents' examples), edit any cell of X or the weights, and watch every later step move. "
                "Each step has its own page; everything downloads as CSV.")
    src = preset.source.get("document")
    st.markdown(f"**{preset.title}**" + (f" · from document `{src}`" if src else "") + f" · tokens: {', '.join(s.tokens[:20])}"
                + (" …" if len(s.tokens) > 20 else ""))
    if preset.description:
        st.caption(preset.description)
    trace = state.current_trace(s)
    if not isinstance(trace, Trace):
        _show_error(trace)
        return
    doc_check(s, trace)
    n, d_model = s.matrices["X"].shape
    rows = [
        ("Tokens & embeddings", "X", _shape(trace.X)),
        ("Weights", "W_q, W_k, W_v", f"{_shape(trace.W_q)}, {_shape(trace.W_k)}, {_shape(trace.W_v)}"),
        ("Q·K·V", "Q = XW_q, K = XW_k, V = XW_v", f"{_shape(trace.Q)}, {_shape(trace.K)}, {_shape(trace.V)}"),
        ("Scores", "S = QKᵀ", _shape(trace.scores)),
        ("Scaling", f"S' = S × {trace.scale:.4g}" + (f", mask: {s.options.mask}" if s.options.mask != "none" else ""), _shape(trace.scaled)),
        ("Softmax", "A = softmax(S'" + (f"/{s.options.temperature:g}" if s.options.temperature != 1 else "") + ")", _shape(trace.weights)),
        ("Output", "O = AV", _shape(trace.output)),
    ]
    left, right = st.columns([3, 2])
    with left:
        st.dataframe(pd.DataFrame(rows, columns=["step", "computes", "shape"]), hide_index=True, width="stretch")
        for p in _pages()[1:]:
            st.page_link(p, label=f"→ {p.title}")
    with right:
        toks = export.token_labels(s.tokens)
        chart = charts.heatmap(as_2d(trace.weights), toks, toks, kind="weights", title="Attention weights", allowed=trace.allowed)
        st.altair_chart(chart, width="content")
    download_all(s, "overview")


def _shape(a: np.ndarray) -> str:
    return " × ".join(str(v) for v in a.shape)
