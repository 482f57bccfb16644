"""The Routes page under AppTest, and what parts push toward on Every head and Attribution: the graph draws exactly the
engine's edges; the strongest routes name the heads patching names; a head's edge opens on the step pages at its
query row and source; the threshold is refused outside its range (and in the address) with nothing changed; a part
read as tokens shows the engine's numbers, checked against the attribution."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from attention.model import attribute, builtin, routes, sweep
from attention.model import pushes as push
from attention.ui.core import jobs, keys
from attention.ui.core.session import Patching
from tests.helpers.apptest import app, drawn_cells, journey, no_exception, session, shown, texts

ENGINE = builtin("induction")  # a model of its own, not the page's


def _md(at) -> str:  # noqa: ANN001
    return " ".join(shown(t).replace("**", "") for t in texts(at.markdown))


def _edges(at) -> list[dict]:  # noqa: ANN001
    """The drawn segments of the routes graph (rows with an "edge" field)."""
    return [r for c in at.get("vega_lite_chart") for rows in drawn_cells(c) for r in rows if "edge" in r]


def test_the_graph_draws_the_engines_edges_and_names_the_strongest_routes() -> None:
    at = journey("routes")
    no_exception(at)
    i = session(at).inside
    want = routes(ENGINE.run(list(i.ids)), i.position, i.threshold)
    drawn = _edges(at)
    assert {r["edge"] for r in drawn if r["kind"] == "head"} == {
        f"head.{e.layer}.{e.head}.{e.source}.{e.target}" for e in want.edges if e.kind == "head"
    }
    assert len(drawn) == 2 * len(want.edges) - sum(e.kind == "residual" for e in want.edges)  # a bend: two lines
    for e in want.edges:  # each edge from its source to its target, as wide as its share
        lines = [r for r in drawn if r["share"] == e.share and r["kind"] == e.kind]
        assert {(r["x"], r["y"]) for r in lines} >= {(e.source, e.below)}
        assert {(r["x2"], r["y2"]) for r in lines} >= {(e.target, e.above)}
    said = _md(at)
    assert f"{len(want.edges)} edges above 0.04 reach position 13" in said
    # the strongest route of heads runs through the heads patching names: the previous-token head, then induction
    words = list(i.ids[: len(i.ids) // 2])
    corrupt = words[:-1] + [next(t for t in range(32) if t not in words)] + words
    named = sweep(ENGINE, words + words, corrupt, -1).heads
    at = at.selectbox(key=keys.READOUT_POSITION).set_value(len(i.ids) - 1).run()
    said = _md(at)
    previous, induction = f"layer 1 · head {np.argmax(named[0]) + 1}", f"layer 2 · head {np.argmax(named[1]) + 1}"
    route = f"“ba” 12 (embeddings) ⟶ *{previous}* ⟶ “fa” 13 (layer 1) ⟶ *{induction}* ⟶ “ba” 24 (layer 2)"
    assert route in said, said


def test_a_heads_edge_chosen_without_the_mouse_opens_at_its_query_row() -> None:
    at = journey("routes")
    box = at.selectbox(key=keys.ROUTES_PICK)
    first = box.options[0]
    assert "layer 2 · head 1" in first  # the strongest head's edge first: the induction head
    at = at.button(key=keys.ROUTES_OPEN).click().run()
    no_exception(at)
    s = session(at)
    i = s.inside
    want = next(e for e in routes(ENGINE.run(list(i.ids)), i.position, i.threshold).edges if e.kind == "head")
    assert (s.model_head.layer, s.model_head.head) == (want.layer, want.head)
    assert s.cell == (want.target, want.source)  # the step pages explain that query row and that source
    assert "The step pages now show layer 2 · head 1" in " ".join(texts(at.success))


def test_the_threshold_changes_the_graph_and_travels_and_a_bad_one_changes_nothing() -> None:
    at = journey("routes")
    before = len(_edges(at))
    at = at.slider(key=keys.ROUTES_THRESHOLD).set_value(0.01).run()
    no_exception(at)
    assert session(at).inside.threshold == 0.01
    assert len(_edges(at)) > before
    assert at.query_params["thr"] == "0.01"
    at = app("routes", {"thr": "0.9"})
    assert "the threshold 0.9 is not a share from 0.005 to 0.5" in " ".join(texts(at.warning))
    assert session(at).inside.threshold == 0.04
    at = app("routes", {"thr": "1e5"})
    assert "The link's threshold “1e5” is not a decimal" in " ".join(texts(at.warning))
    at = app("routes", {"thr": "0.2", "at": "24"})
    assert (session(at).inside.threshold, session(at).inside.position) == (0.2, 23) and not at.warning


def test_a_part_of_the_graph_read_as_tokens_against_the_engine() -> None:
    at = journey("routes")
    i = session(at).inside
    run = ENGINE.run(list(i.ids))
    token = int(np.argmax(run.logits[i.position]))
    at = at.selectbox(key=keys.ROUTES_PART).set_value((1, 0)).run()
    got = push.heads(run, i.position, 1, token)[0]
    share = attribute(run, i.position, token).heads[1, 0]
    assert abs(got.share - share) < 1e-9
    said = _md(at)
    assert "layer 2 · head 1 moves each logit by" in said
    top = ENGINE.pieces([int(got.promoted[0])])[0]
    assert f"Promotes “{top}”" in said


def test_every_heads_card_and_attribution_read_a_head_as_tokens() -> None:
    at = journey("every_head")
    box = next(e for e in at.expander if e.label == "What it pushes toward (tokens)")
    assert box is not None
    at = journey("attribution")
    no_exception(at)
    said = _md(at)
    assert "layer 2 · head 1 moves each logit by" in said and "Promotes" in said and "Suppresses" in said
    assert "This model is attention-only" in " ".join(texts(at.caption))


def test_a_llama_family_checkpoint_its_routes_mlps_and_neurons(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """A tiny Llama (grouped heads, RMSNorm, SwiGLU) served from a folder: the graph draws the engine's edges, MLP
    edges among them; an MLP read as tokens lists its neurons, whose shares add up to its share on Attribution."""
    from attention.model import load
    from tests.helpers.families import tiny_llama

    folder = tiny_llama(tmp_path / "llama")
    monkeypatch.setenv("ATTENTION_MODELS", f"tiny={folder}")
    at = journey("routes")
    at = at.selectbox(key=keys.INSIDE_MODEL).set_value("server:tiny").run()
    no_exception(at)
    i = session(at).inside
    m = load(folder)
    run = m.run(list(i.ids))
    want = routes(run, i.position, i.threshold)
    drawn = _edges(at)
    assert {r["edge"] for r in drawn} == {
        f"head.{e.layer}.{e.head}.{e.source}.{e.target}" if e.kind == "head" else f"{e.kind}.{e.below}.{e.target}"
        for e in want.edges
    }
    assert any(e.kind == "mlp" for e in want.edges) and "layer 1 MLP" in want.levels
    mlp = next(e for e in want.edges if e.kind == "mlp")
    at = at.selectbox(key=keys.ROUTES_PART).set_value((mlp.layer, -1)).run()
    no_exception(at)
    said = _md(at)
    token = int(np.argmax(run.logits[i.position]))
    share = attribute(run, i.position, token).mlps[mlp.layer]
    cells = push.neurons(run, i.position, mlp.layer, token)
    assert abs(cells.shares.sum() + cells.bias - share) <= 1e-9 * max(1.0, abs(share))
    assert f"the MLP of layer {mlp.layer + 1} moves each logit by" in said
    table = at.dataframe[-1].value
    assert list(table["neuron"]) == [int(k) + 1 for k in cells.order[:10]]


def test_a_qk_norm_model_says_why_its_heads_do_not_open_in_words_on_routes_and_attribution(tmp_path, monkeypatch):  # noqa: ANN001
    """OLMo-2 (QK-norm across every head): Routes and Attribution say why a head does not open on the step pages, the
    norm's scope filled in (the template's {what} once showed through), and their head pickers are shut; Qwen3 (QK-norm
    per head) opens like any other model: no such note, the pickers open."""
    from attention.model.qk_steps import WHAT
    from tests.helpers.families import Made, tiny_config

    for family in ("qwen3", "olmo2"):
        folder = Made(family, tmp_path / family).folders["float32"]
        monkeypatch.setenv("ATTENTION_MODELS", f"{family}={folder}")
        shut = tiny_config(family).qk_norm_scope != "head"
        for page in ("routes", "attribution"):
            at = journey(page)
            at = at.selectbox(key=keys.INSIDE_MODEL).set_value(f"server:{family}").run()
            no_exception(at)
            said = [t for t in texts(at.caption) if "QK-norm" in t]
            assert bool(said) == shut and all("{" not in t for t in said), (family, page, said)
            assert all(WHAT[tiny_config(family).qk_norm_scope] in t for t in said), (family, page, said)
            picker = keys.ROUTES_PICK if page == "routes" else keys.READOUT_PICK
            assert all(box.disabled == shut for box in at.selectbox if box.key == picker), (family, page)


def test_the_strongest_routes_say_a_run_of_the_streams_hops_once() -> None:
    """Issue 49 §3: a route read as about 60 hops of "⟶ residual ⟶". Each run of the stream's own hops is said once
    ("stream to layer 2"), the stream's last hops up to the top are left unsaid, and every head on the route is
    named in its order, from the engine's routes at the page's position and threshold."""
    at = journey("routes")
    i = session(at).inside
    r = routes(ENGINE.run(list(i.ids)), i.position, i.threshold)
    block = next(t for t in texts(at.markdown) if t.startswith("**The strongest routes**"))
    lines = [line for line in shown(block).split("\n") if line[:1].isdigit() and "⟶" in line]
    found = r.strongest(8)
    assert len(lines) == len(found) and found
    if len(found) > 5:  # the list says which of its routes are the lines drawn (the 5 strongest)
        assert block.startswith("**The strongest routes** (the first 5 are the lines drawn above; "), block[:120]
    for line, (_, path) in zip(lines, found, strict=True):
        assert "residual" not in line and "⟶ *stream to" not in line.split("*stream to", 1)[-1].split("⟶", 1)[0]
        kinds = [e.kind for e in path]
        last = max((k for k, kind in enumerate(kinds) if kind != "residual"), default=-1)
        runs_ = sum(1 for k in range(last + 1) if kinds[k] == "residual" and (k == last or kinds[k + 1] != "residual"))
        assert line.count("stream to") == (runs_ if last >= 0 else 1), (line, kinds)
        heads = [f"layer {e.layer + 1} · head {e.head + 1}" for e in path if e.kind == "head"]
        assert [h for h in heads if h in line] == heads and line.count(" · head ") == len(heads), line
        assert line.count("⟶") == len(heads) * 2 + line.count("stream to") + line.count("MLP") * 1, line


def test_read_a_part_opens_on_the_strongest_routes_largest_part() -> None:
    """Issue 49 §3: "Read a part as tokens" opened on the first part in order (L1H2, which does not promote the
    prediction); it opens on the head or MLP with the largest share on the strongest route, from the engine's."""
    at = journey("routes")
    i = session(at).inside
    r = routes(ENGINE.run(list(i.ids)), i.position, i.threshold)
    _, path = r.strongest(1)[0]
    best = max((e for e in path if e.kind in ("head", "mlp")), key=lambda e: e.share)
    assert at.selectbox(key=keys.ROUTES_PART).value == (best.layer, best.head)


def test_a_head_attribution_ranks_high_but_no_route_holds_is_named_with_its_share() -> None:
    """Issue 49 §3: with a high threshold, a head among Attribution's top three that no edge holds is named, with its
    share of the logit from the engine's attribute(), and the page says why routes and attribution can differ."""
    at = journey("routes")
    at = at.slider(key=keys.ROUTES_THRESHOLD).set_value(0.3).run()
    no_exception(at)
    i = session(at).inside
    run = ENGINE.run(list(i.ids))
    r, a = routes(run, i.position, i.threshold), attribute(run, i.position)
    on = {(e.layer, e.head) for e in r.edges if e.kind == "head"}
    top = [divmod(int(k), 2) for k in np.argsort(-np.abs(a.heads), axis=None)[:3]]
    off = [(la, h) for la, h in top if (la, h) not in on]
    said = " ".join(texts(at.caption))
    assert off, "at 0.3 some top head is off the graph"
    for la, h in off:
        assert f"layer {la + 1} · head {h + 1} (its attribution share {a.heads[la, h]:.3f})" in said, said
    assert "what the prediction depends on" in said


def _lines(at) -> tuple[dict, list[dict]]:  # noqa: ANN001
    """The routes-as-lines chart's spec and its rows (rows with a "route" field)."""
    chart = next(c for c in at.get("vega_lite_chart") if any("route" in r for rows in drawn_cells(c) for r in rows))
    return json.loads(chart.proto.spec), [r for rows in drawn_cells(chart) for r in rows if "route" in r]


def test_each_strongest_route_is_one_line_through_its_parts_labelled_with_words_for_it() -> None:
    """Issue 49 §3: a route is one line a person can follow. Each of the 5 strongest routes (the engine's) is one
    line, in its order from the embeddings to the top, through the engine's nodes; a dot and its number at each head
    or MLP; its own colour and dash; and the chart's text alternative says each route in words."""
    at = journey("routes")
    no_exception(at)
    i = session(at).inside
    r = routes(ENGINE.run(list(i.ids)), i.position, i.threshold)
    found = r.strongest(5)
    spec, rows = _lines(at)
    names = [
        f"{k} ({w:.3f}): " + (" → ".join(
            f"layer {e.layer + 1} · head {e.head + 1}" if e.kind == "head" else f"MLP {e.layer + 1}"
            for e in path if e.kind != "residual"
        ) or "the stream alone")
        for k, (w, path) in enumerate(found, 1)
    ]  # fmt: skip
    assert sorted({row["route"] for row in rows}) == sorted(names) and len(found) >= 2
    colours = spec["layer"][0]["encoding"]["color"]["scale"]
    dashes = spec["layer"][0]["encoding"]["strokeDash"]["scale"]
    assert colours["domain"] == names == dashes["domain"]
    assert len(set(colours["range"])) == len(names) and len({tuple(d) for d in dashes["range"]}) == len(names)
    pieces = ENGINE.pieces(list(i.ids))
    for name, (_, path) in zip(names, found, strict=True):
        mine = sorted((row for row in rows if row["route"] == name), key=lambda row: row["order"])
        want = [(path[0].below, path[0].source), *((e.above, e.target) for e in path)]
        assert [(row["x"], row["token"]) for row in mine] == [(lv, f"{p + 1} {pieces[p]}") for lv, p in want]
        parts = [row["what"] for row in mine if row["part"]]
        assert parts == [
            f"layer {e.layer + 1} · head {e.head + 1}" if e.kind == "head" else f"MLP {e.layer + 1}"
            for e in path if e.kind != "residual"
        ]  # fmt: skip
        assert [row["mark"] for row in mine if row["mark"]] == [name.split(" ")[0]] == [row["mark"] for row in mine[:1]]
        heads = [f"layer {e.layer + 1} · head {e.head + 1}" for e in path if e.kind == "head"]
        said = {row["words"] for row in mine}.pop()
        assert said == spec["description"].split("; ")[names.index(name)].split("one line each: ")[-1]
        said = said.split(f"route {name.split(':')[0]}: ", 1)[1]
        assert said.startswith(f"“{pieces[path[0].source]}” {path[0].source + 1}") and all(h in said for h in heads)


def test_a_head_patching_ranks_high_but_no_route_holds_is_named_with_both_shares() -> None:
    """Issue 49 §3: once the Patching page's sweep ran on this text (its clean text, read at its last position), a
    head among Patching's or Attribution's top three that no edge holds is named with its share of each; Patching's
    from the engine's own sweep (a separate computation) and Attribution's from attribute()."""
    at = journey("routes")
    i = session(at).inside
    ids = tuple(i.ids)
    corrupt = ids[:11] + (next(t for t in range(32) if t not in ids),) + ids[12:]
    run = ENGINE.run(list(ids))
    answer, wrong = int(np.argmax(run.logits[-1])), int(np.argmax(ENGINE.run(list(corrupt)).logits[-1]))
    job = jobs.patch(jobs.PatchRequest("induction", ids, corrupt, answer, wrong))
    assert jobs.wait(job.id, timeout=120).state == "done"
    s = session(at)
    at.session_state["attention_session"] = dataclasses.replace(
        s, patching=Patching("induction", ids, corrupt, answer=answer, wrong=wrong, job=job.id)
    )
    at = at.selectbox(key=keys.READOUT_POSITION).set_value(len(ids) - 1).run()
    at = at.slider(key=keys.ROUTES_THRESHOLD).set_value(0.3).run()
    no_exception(at)
    i = session(at).inside
    r, a = routes(run, i.position, i.threshold), attribute(run, i.position)
    exact = sweep(ENGINE, list(ids), list(corrupt), -1, answer, wrong).heads
    on = {(e.layer, e.head) for e in r.edges if e.kind == "head"}
    top = {divmod(int(k), 2) for shares in (a.heads, exact) for k in np.argsort(-np.abs(shares), axis=None)[:3]}
    off = sorted(h for h in top if h not in on)
    said = " ".join(texts(at.caption))
    assert off, "at 0.3 some top head is off the graph"
    for la, h in off:
        named = f"layer {la + 1} · head {h + 1} (its attribution share {a.heads[la, h]:.3f}; its patching share "
        assert named + f"{exact[la, h]:.3f})" in said, said
    assert "Ranked high by Attribution or Patching" in said
