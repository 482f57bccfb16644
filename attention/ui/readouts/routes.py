"""The "Routes" page: the graph of the routes by which information reaches a prediction.

The engine finds them (:func:`attention.model.routes`); this page draws only what it returns.

Positions run left to right and levels (the embeddings, then after each attention and each MLP) bottom to top. Each
edge is one part of a residual update whose share of that update is above the threshold and that connects to the
chosen position at the top: a head's write from one source position, an MLP's write, or the residual carried up. A
click on a head's edge (or the list below the graph) opens that head on the step pages at that query row; the
strongest routes are written out; any part on the graph can be read as tokens (:mod:`.pushes`).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ... import charts
from ...errors import AttentionError
from ...model import Edge, Routes, routes
from ..address import url
from ..core import jobs, keys, models, session
from ..core.cache import kept
from ..core.text import esc
from ..headpages import every_head
from ..modelpages import choose, readout, runs
from ..state import inside
from ..widgets.common import bind, chart_gap, vega_chart

DRAWN = 1500  # edges drawn at most (strongest first); the rest are counted
LISTED = 8  # strongest routes written out
AS_LINES = len(charts.ROUTE_LINE_STYLES)  # strongest routes drawn each as one line (5: each its colour and dash)


def body(s: session.Session) -> None:
    """Choose a model and a text (shared with Every head), a position and a threshold; the graph of its routes."""
    choose.chooser()
    every_head.choose_text()
    graph()


@kept(16)
def found(model_id: str, ids: tuple[int, ...], position: int, threshold: float) -> Routes | str:
    """The routes of the model's run on ``ids`` (no head ablated) at ``position``, or why the engine refused."""
    try:
        m = models.get(model_id)
        with models.LOCK:  # the run cache is not shared safely between threads
            run = m.run(list(ids))
        return routes(run, position, threshold)
    except AttentionError as e:
        return f"{e}"


def now() -> Routes | str:
    i = inside.now()
    return found(i.model, i.ids, i.position, i.threshold)


@st.fragment
def graph() -> None:
    """The controls, the graph, the keyboard's way to open a head's edge, the strongest routes, a part as tokens."""
    url.write(session.get())  # a choice here reruns this part only: the address follows it
    readout.controls()
    st.caption(readout.position_note())  # ours: numbers, the token escaped
    threshold_control()
    found_now = now()
    if isinstance(found_now, str):
        st.error(esc(found_now, 400))
        return
    if inside.now().ablations:
        st.caption("Routes are read on the model with no head ablated: they split each head's output by its sources.")
    st.markdown(summary(found_now))  # ours: numbers, tokens escaped
    draw_lines(found_now)
    draw(found_now)
    pick_edge(found_now)
    st.markdown(strongest(found_now))  # ours: numbers, names, tokens escaped
    missing = off_routes(found_now)
    if missing:
        st.caption(missing)  # ours: head names and numbers
    read_part(found_now)


def threshold_control() -> None:
    low, high = inside.THRESHOLDS
    bind(keys.ROUTES_THRESHOLD, inside.now().threshold)
    st.slider(
        "Threshold: keep an edge when its share of its update is above",
        min_value=low,
        max_value=high,
        step=0.005,
        format="%.3f",
        key=keys.ROUTES_THRESHOLD,
        on_change=inside.on_threshold,
        help="Each update of the stream is a sum of parts; a part's share is how close it is to the sum (in L1), "
        "divided by the total of all the parts' closeness. Lower keeps more edges.",
    )


def token_at(position: int) -> str:
    return esc(runs.pieces([inside.now().ids[position]])[0], 30)


def summary(r: Routes) -> str:
    heads = sum(e.kind == "head" for e in r.edges)
    return (
        f"**{len(r.edges):,} edges** above {r.threshold:g} reach position {r.position + 1} (“{token_at(r.position)}”) "
        f"at the top: {heads:,} from heads, {sum(e.kind == 'mlp' for e in r.edges):,} from MLPs, "
        f"{sum(e.kind == 'residual' for e in r.edges):,} the residual carried up; {len(r.nodes):,} stream nodes."
    )


def edge_id(e: Edge) -> str:
    """An edge's name in the chart: "head.1.0.12.23", "mlp.1.23", "residual.2.23"."""
    if e.kind == "head":
        return f"head.{e.layer}.{e.head}.{e.source}.{e.target}"
    return f"{e.kind}.{e.below}.{e.target}"


def edge_name(e: Edge, levels: tuple[str, ...]) -> str:
    """An edge as a person reads it (tokens not escaped: for the chart's tooltips and the escaped lists)."""
    ids = inside.now().ids
    to = f"{e.target + 1} “{runs.pieces([ids[e.target]])[0]}”"
    if e.kind == "head":
        return f"{runs.name(e.layer, e.head)}: {e.source + 1} “{runs.pieces([ids[e.source]])[0]}” → {to}"
    if e.kind == "mlp":
        return f"MLP of layer {e.layer + 1} at {to}"
    return f"residual at {to}: {levels[e.below]} → {levels[e.above]}"


def segments(r: Routes) -> list[charts.RouteSegment]:
    """The drawn lines, weakest first (the strongest on top): a head's edge from its source to its target through a
    bend of its own (heads with the same source and target side by side), the residual straight up, an MLP's through
    its node beside the stream."""
    H, out = runs.model().config.n_heads, []
    for e in reversed(r.edges[:DRAWN]):
        common = dict(edge=edge_id(e), kind=e.kind, share=e.share, label=edge_name(e, r.levels), opens=e.kind == "head")
        mid_y = (e.below + e.above) / 2
        if e.kind == "residual":
            out.append(charts.RouteSegment(x=e.target, y=e.below, x2=e.target, y2=e.above, **common))
            continue
        mid_x = e.target + 0.3 if e.kind == "mlp" else (e.source + e.target) / 2 + (e.head - (H - 1) / 2) * 0.8 / H
        out.append(charts.RouteSegment(x=e.source, y=e.below, x2=mid_x, y2=mid_y, **common))
        out.append(charts.RouteSegment(x=mid_x, y=mid_y, x2=e.target, y2=e.above, **common))
    return out


def route_lines(r: Routes) -> list[charts.RouteLine]:
    """The :data:`AS_LINES` strongest routes, each one line: its number, strength and parts (its legend entry), its
    points from its token at the embeddings to the top, each named by the head or MLP just passed ("stream" for the
    stream's own hop), and the route in words."""
    out = []
    for k, (w, path) in enumerate(r.strongest(AS_LINES), 1):
        points = [(path[0].below, path[0].source, "stream")]
        points += [(e.above, e.target, part_name(e)) for e in path]
        parts = " → ".join(part_name(e) for e in path if e.kind != "residual") or "the stream alone"
        words = f"route {k} ({w:.3f}): {route_words(path)}"
        out.append(charts.RouteLine(f"{k} ({w:.3f}): {parts}", tuple(points), words))
    return out


def part_name(e: Edge) -> str:
    """The part an edge is: "layer 2 · head 1", "MLP 3", or "stream" (the residual carried up)."""
    if e.kind == "head":
        return runs.name(e.layer, e.head)
    return f"MLP {e.layer + 1}" if e.kind == "mlp" else "stream"


def route_words(path: tuple[Edge, ...]) -> str:
    """A route in plain words for the chart's text alternative: its token, then each head or MLP it passes and the
    token a head moves it to ("“ba” 12 → layer 1 · head 2 → “fa” 13 → layer 2 · head 1 → “ba” 24")."""
    ids = inside.now().ids
    out = [f"“{runs.pieces([ids[path[0].source]])[0]}” {path[0].source + 1}"]
    for e in path:
        if e.kind != "residual":
            out.append(part_name(e))
        if e.kind == "head":
            out.append(f"“{runs.pieces([ids[e.target]])[0]}” {e.target + 1}")
    return " → ".join(out)


def draw_lines(r: Routes) -> None:
    """The strongest routes, each one line a person follows from its token to the prediction, numbered as in the list
    below the graph; each line's text alternative is its route in words (and the chart's description all of them)."""
    found_routes = r.strongest(AS_LINES)
    if not found_routes:
        return
    ids = inside.now().ids
    about = f"The {len(found_routes)} strongest routes to position {r.position + 1}, one line each: " + "; ".join(
        f"route {k} ({w:.3f}): {route_words(path)}" for k, (w, path) in enumerate(found_routes, 1)
    )
    title = f"The {len(found_routes)} strongest routes to position {r.position + 1}, each one line"
    chart_gap()
    vega_chart(charts.routes_lines(route_lines(r), runs.pieces(ids), r.levels, title, about), width="stretch",
               key=keys.ROUTES_LINES)  # fmt: skip
    st.caption(
        "Each line is one route, read left to right: from its token at the embeddings (its number there) up through "
        "the levels; a dot marks each head or MLP it passes (point at it for its name), and a head moves it to another "
        "row. Routes that run together are drawn side by side. They are numbered as in the list of the strongest "
        "routes below the graph of every edge."
    )


def draw(r: Routes) -> None:
    """The graph; a click on a head's edge opens that head (disabled for a QK-norm across every head, which the step
    pages refuse)."""
    ids = inside.now().ids
    nodes = [(p, level, f"{r.levels[level]}, {p + 1} “{runs.pieces([ids[p]])[0]}”") for level, p in sorted(r.nodes)]
    title = f"Routes to the prediction at position {r.position + 1}"
    spec = charts.routes_graph(segments(r), nodes, runs.pieces(ids), r.levels, title)
    chart_gap()
    if every_head.shut():
        vega_chart(spec, width="stretch", key=keys.ROUTES_GRAPH)
        st.caption(every_head.qk_norm_note())
    else:
        vega_chart(spec, width="stretch", on_select=on_click, selection_mode="edge", key=keys.ROUTES_GRAPH)
    if len(r.edges) > DRAWN:
        st.caption(f"The {DRAWN:,} strongest edges are drawn; raise the threshold to see the rest in fewer.")


def on_click() -> None:
    """An edge was clicked: a head's edge opens that head on the step pages, its target row and source explained."""
    event = st.session_state.get(keys.ROUTES_GRAPH)
    picked = (((event or {}).get("selection") or {}).get("edge") or [None])[0]
    found_now = now()
    if not isinstance(picked, dict) or isinstance(found_now, str):
        return
    chosen = next((e for e in found_now.edges if e.kind == "head" and edge_id(e) == picked.get("edge")), None)
    if chosen is not None:
        inside.open_route(chosen.layer, chosen.head, chosen.target, chosen.source)


def pick_edge(r: Routes) -> None:
    """The same without the mouse: the heads' edges, strongest first, and a button; then where to go."""
    heads = [e for e in r.edges if e.kind == "head"]
    if not heads:
        st.caption("No head's edge is above the threshold: lower it to see which heads carry the prediction.")
        return
    names = {edge_id(e): f"{edge_name(e, r.levels)} ({e.share:.3f})" for e in heads}
    disabled = every_head.shut()
    left, right = st.columns([3, 2], gap="medium", vertical_alignment="bottom")
    with left:
        st.selectbox(
            "Or choose a head's edge (strongest first)",
            list(names),
            format_func=lambda k: names.get(k, k),
            key=keys.ROUTES_PICK,
            disabled=disabled,
        )
    with right:
        st.button("Open it on the step pages", key=keys.ROUTES_OPEN, on_click=open_picked, disabled=disabled)
    opened = inside.now().opened
    if opened is not None:
        every_head.opened(*opened)


def open_picked() -> None:
    found_now = now()
    picked = st.session_state.get(keys.ROUTES_PICK)
    if isinstance(found_now, str):
        return
    chosen = next((e for e in found_now.edges if e.kind == "head" and edge_id(e) == picked), None)
    if chosen is not None:
        inside.open_route(chosen.layer, chosen.head, chosen.target, chosen.source)


def strongest(r: Routes) -> str:
    """The strongest routes from the embeddings to the top, each edge named, with its strength."""
    found_routes = r.strongest(LISTED)
    if not found_routes:
        return "No route reaches the embeddings above this threshold: lower it."
    lines = [f"{k}. **{w:.3f}**: " + route_text(path, r.levels) for k, (w, path) in enumerate(found_routes, 1)]
    drawn = min(AS_LINES, len(found_routes))
    lined = f"the first {drawn} are the lines drawn above; " if len(found_routes) > drawn else ""
    return (
        f"**The strongest routes** ({lined}a route's strength is the product of its edges' shares: how much of each "
        "sum it joins flows on along it):\n\n" + "\n".join(lines)
    )


def route_text(path: tuple[Edge, ...], levels: tuple[str, ...]) -> str:
    """A route as a person follows it: its token at the bottom, each head and MLP it passes, a run of the stream's
    own hops said once ("stream to layer 24 attention"), and the token a head moves it to: "“fa” 1 (embeddings) ⟶
    *MLP 1* ⟶ *stream to layer 2 attention* ⟶ *layer 2 · head 1* ⟶ “bi” 2 (layer 2 attention)". The stream's last
    hops up to the top, at the same position, are left unsaid. Tokens escaped."""
    ids = inside.now().ids

    def node(level: int, p: int) -> str:
        return f"“{esc(runs.pieces([ids[p]])[0], 30)}” {p + 1} ({levels[level]})"

    last = max((k for k, e in enumerate(path) if e.kind != "residual"), default=-1)  # the stream carries it on
    out = [node(path[0].below, path[0].source)]
    for k, e in enumerate(path[: last + 1]):
        if e.kind == "residual":
            if k + 1 <= last and path[k + 1].kind == "residual":
                continue  # one hop of a run: the run is said once, at its end
            out.append(f"*stream to {levels[e.above]}*")
        elif e.kind == "mlp":
            out.append(f"*MLP {e.layer + 1}*")
        else:
            out += [f"*{runs.name(e.layer, e.head)}*", node(e.above, e.target)]
    if last < 0:  # the stream alone: the token carried up at its own position
        out.append(f"*stream to {levels[path[-1].above]}*")
    elif path[last].kind == "mlp":
        out.append(node(path[last].above, path[last].target))
    return " ⟶ ".join(out)


RANKED = 3  # the heads with the largest attribution (and patching) shares checked against the routes


def patched(r: Routes) -> np.ndarray | None:
    """Patching's exact shares of the heads, (layers, heads), when this session's sweep on the Patching page finished
    on this model with this text as its clean text, and the routes read its last position (the one patching reads)
    with no head ablated (the sweep's runs ablate none); None otherwise."""
    i, p = inside.now(), session.get().patching
    if p is None or p.model != i.model or tuple(p.clean) != tuple(i.ids) or r.position != len(i.ids) - 1 or i.ablations:
        return None
    job = jobs.get(p.job)
    done = job is not None and job.state == "done" and isinstance(job.result, jobs.Refined)
    return job.result.exact.heads if done else None


def _top(shares: np.ndarray | None) -> list[tuple[int, int]]:
    """The :data:`RANKED` heads with the largest |share| (a head outside the sweep's scope, NaN, last)."""
    if shares is None:
        return []
    order = np.argsort(-np.nan_to_num(np.abs(shares), nan=-np.inf), axis=None)[:RANKED]
    return [divmod(int(k), shares.shape[1]) for k in order]


def _patching_share(share: float) -> str:
    """A head's exact patching share as the note says it: a number, or that the sweep's chosen scope left it out."""
    return "not in the patching sweep's scope" if np.isnan(share) else f"its patching share {share:.3f}"


def off_routes(r: Routes) -> str:
    """A note naming the heads Attribution (or Patching, when its sweep ran on this text) ranks among its top
    :data:`RANKED` that no edge of the graph holds, with their share of each, and why that can be (empty when every
    one of them is on the graph)."""
    _, att, _ = readout.now()
    if isinstance(att, str):
        return ""
    on = {(e.layer, e.head) for e in r.edges if e.kind == "head"}
    exact = patched(r)
    off = [h for h in dict.fromkeys(_top(att.heads) + _top(exact)) if h not in on]
    if not off:
        return ""
    named = ", ".join(
        f"{runs.name(la, h)} (its attribution share {att.heads[la, h]:.3f}"
        + ("" if exact is None else f"; {_patching_share(exact[la, h])}")
        + ")"
        for la, h in off
    )
    ranked = "Attribution" if exact is None else "Attribution or Patching"
    return (
        f"Ranked high by {ranked} but on no route above {r.threshold:g}: {named}. A route measures how much of "
        "each sum a part writes; Attribution and Patching measure what the prediction depends on: a head can write a "
        "small part of a large stream and still move the logit most."
        + ("" if exact is not None else " Patching's shares are named too once its exact sweep has run with this text "
           "as its clean text.")
    )


def first_part(r: Routes) -> tuple[int, int] | None:
    """The head or MLP with the largest share on the strongest route, as (layer, head; −1 for an MLP), or None."""
    best = r.strongest(1)
    on = [e for e in (best[0][1] if best else ()) if e.kind in ("head", "mlp")]
    return max(((e.layer, e.head) for e in on), key=lambda p: max(e.share for e in on if (e.layer, e.head) == p),
               default=None)


def read_part(r: Routes) -> None:
    """The graph's nodes as tokens: any head or MLP with an edge on the graph, what it pushes toward at the top."""
    parts = sorted({(e.layer, e.head) for e in r.edges if e.kind in ("head", "mlp")})
    if not parts:
        return
    names = {p: runs.name(*p) if p[1] >= 0 else f"MLP of layer {p[0] + 1}" for p in parts}
    chosen = st.selectbox(
        f"Read a part of the graph as tokens (what it writes at position {r.position + 1})",
        parts,
        index=parts.index(first_part(r) or parts[0]),  # opens on the strongest route's largest part
        format_func=lambda p: names.get(p, str(p)),
        key=keys.ROUTES_PART,
    )
    if chosen in names:
        if chosen[1] >= 0:
            readout.head(*chosen)
        else:
            readout.mlp(chosen[0])
