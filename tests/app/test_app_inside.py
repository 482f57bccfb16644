"""The Every head page under AppTest: the learner's journey's numbers against the engine run directly, bad words."""

from __future__ import annotations

import numpy as np
import pytest

from attention.model import ablate, builtin, induction
from attention.ui.core import keys
from tests.helpers.apptest import (
    app,
    errors,
    goto,
    head_button,
    head_plots,
    journey,
    layer_charts,
    no_exception,
    press,
    select,
    session,
    texts,
)

ENGINE = builtin("induction")  # a model of its own, not the page's: the oracle runs the engine directly


def _engine(ids: tuple[int, ...], *ablations: tuple[int, int, str]) -> dict[str, object]:
    """Losses on each half and every head's scores, computed by the engine's own induction-task functions."""
    run = ENGINE.run(list(ids), [ablate(*a) for a in ablations])
    arr = np.array(ids)[None]
    first, repeated = induction.half_losses(run.logits[None], arr, len(ids) // 2)
    prev, ind = induction.head_scores(run.weights[None], len(ids) // 2)
    p = np.exp(run.logits - run.logits.max(-1, keepdims=True))
    return {"first": first, "repeated": repeated, "prev": prev, "ind": ind, "probs": p / p.sum(-1, keepdims=True)}


def _metric(at, start: str) -> str:
    found = [m.value for m in at.metric if m.label.startswith(start)]
    assert found, [m.label for m in at.metric]
    return found[0]


def _role_lines(at) -> list[str]:
    """Each head's role and score, as its picture's subtitle says it."""
    return [f"Role: {subtitle}" for _, subtitle, _ in head_plots(at)]


def _click(at, key: str):
    at = press(at, key)
    no_exception(at)
    return at


def test_the_page_draws_every_head_with_its_role_and_the_predictions() -> None:
    at = app("every_head")
    no_exception(at)
    ids = session(at).inside.ids
    assert len(ids) == 24 and ids[:12] == ids[12:]
    charts = at.get("vega_lite_chart")
    assert len(charts) == len(layer_charts(at)) == 2  # 2 layers × 2 heads, one chart a layer
    assert [title for title, _, _ in head_plots(at)] == [f"layer {la} · head {h}" for la in (1, 2) for h in (1, 2)]
    want = _engine(ids)
    lines = _role_lines(at)
    assert lines[2].startswith("Role: induction") and f"induction {want['ind'][1, 0]:.2f}" in lines[2]
    assert lines[1].startswith("Role: previous-token") and f"previous-token {want['prev'][0, 1]:.2f}" in lines[1]
    assert _metric(at, "Loss on the repeated half") == f"{want['repeated']:.2f} nats"
    assert _metric(at, "Loss on the first half") == f"{want['first']:.2f} nats"
    top = at.dataframe[0].value  # the top 5 at the default position 13 (0-based 12)
    probs = want["probs"][12]
    assert list(top["next token"]) == ENGINE.pieces(list(np.argsort(-probs)[:5]))
    np.testing.assert_allclose(top["probability"], np.sort(probs)[::-1][:5], rtol=1e-9)


def test_the_learners_journey_gives_the_engines_numbers() -> None:
    at = journey("every_head")
    ids = session(at).inside.ids
    clean = _engine(ids)
    # 1. the induction head: the strongest induction score is layer 2 · head 1
    assert np.unravel_index(np.argmax(clean["ind"]), (2, 2)) == (1, 0)
    assert clean["ind"][1, 0] > 0.9 and clean["repeated"] < 0.1
    strongest = [t.replace("**", "") for t in texts(at.markdown) if t.startswith("The strongest head")][0]
    assert f"induction layer 2 · head 1 ({clean['ind'][1, 0]:.2f})" in strongest, strongest
    assert f"previous-token layer 1 · head 2 ({clean['prev'][0, 1]:.2f})" in strongest, strongest
    # 2. ablate it: the repeated half's loss rises, and the page says so with the engine's numbers
    at = _click(at, "inside.toggle.1.0")
    off = _engine(ids, (1, 0, "zero"))
    assert off["repeated"] > 1.0
    assert _metric(at, "Loss on the repeated half") == f"{off['repeated']:.2f} nats"
    said = texts(at.info)[0]
    assert f"the loss on the repeated half rose from {clean['repeated']:.2f} to {off['repeated']:.2f} nats" in said
    assert said.startswith("Ablating layer 2 · head 1 (zero)")
    assert len(at.info) == 1  # said once, under the button pressed
    p_clean, p_off = clean["probs"][12], off["probs"][12]
    name = ENGINE.pieces([int(np.argmax(p_clean)), int(np.argmax(p_off))])
    assert f"At position 13 ({ENGINE.pieces([ids[12]])[0]}) the most likely next token" in said
    if name[0] != name[1]:
        # both between 0.1 and 1: the default 4 significant digits are 4 decimals
        assert f"went from {name[0]} ({p_clean.max():.4f}) to {name[1]} ({p_off.max():.4f})" in said, said
    else:
        assert f"is still {name[0]} ({p_clean.max():.4f} → {p_off.max():.4f})" in said, said
    # 3. restore it: back to the clean numbers
    at = _click(at, "inside.toggle.1.0")
    assert _metric(at, "Loss on the repeated half") == f"{clean['repeated']:.2f} nats"
    assert f"fell from {off['repeated']:.2f} to {clean['repeated']:.2f} nats" in texts(at.info)[0]
    # 4. ablate the previous-token head in layer 1: the induction head's pattern falls apart too
    assert _role_lines(at)[1].startswith("Role: previous-token")
    at = _click(at, "inside.toggle.0.1")
    broken = _engine(ids, (0, 1, "zero"))
    assert broken["ind"][1, 0] < 0.5 * clean["ind"][1, 0]
    said = texts(at.info)[0]
    assert f"Layer 2 · head 1's induction score fell from {clean['ind'][1, 0]:.2f} to {broken['ind'][1, 0]:.2f}" in said
    at = select(at, keys.INSIDE_HEAD_SHOWN, (1, 0))  # the induction head chosen: its controls say its three scores
    (line,) = [m.replace("**", "") for m in texts(at.markdown) if m.startswith("**layer 2 · head 1** · role:")]
    assert f"induction {broken['ind'][1, 0]:.2f}" in line, line
    assert _metric(at, "Loss on the repeated half") == f"{broken['repeated']:.2f} nats"
    # the predictions answer back: the chosen position's top 5 is the ablated engine's, beside the clean one
    top = at.dataframe[0].value
    assert list(top["next token"]) == ENGINE.pieces(list(np.argsort(-broken["probs"][12])[:5]))
    np.testing.assert_allclose(
        top["without ablations"], clean["probs"][12][np.argsort(-broken["probs"][12])[:5]], rtol=1e-9
    )


def test_mean_ablation_and_a_page_switch_keep_the_state() -> None:
    at = journey("every_head")
    ids = session(at).inside.ids
    at = at.radio(key="inside.w.how").set_value("mean").run()
    at = _click(at, "inside.toggle.1.0")
    assert session(at).inside.ablations == ((1, 0, "mean"),)
    want = _engine(ids, (1, 0, "mean"))
    assert _metric(at, "Loss on the repeated half") == f"{want['repeated']:.2f} nats"
    at = goto(at, "softmax")
    no_exception(at)
    at = goto(at, "every_head")
    no_exception(at)
    assert session(at).inside.ablations == ((1, 0, "mean"),)
    assert at.radio(key="inside.w.how").value == "mean"
    assert _metric(at, "Loss on the repeated half") == f"{want['repeated']:.2f} nats"


@pytest.mark.parametrize(
    "typed, named",
    [
        ("ba be xyz bo", "word 3, 'xyz', is not in the vocabulary"),
        ("ba ![x](http://h/p.png)", "word 2"),
        ("ba", "The text has 1 word; the pages need at least 2"),
        (" ".join(["ba"] * 25), "The text has 25 words; this model's pages read at most 24 (its context is 24)"),
    ],
)
def test_bad_words_are_named_and_nothing_changes(typed: str, named: str) -> None:
    at = app("every_head")
    fields = ("ids", "position", "ablations")  # of the model pages' record (Session.inside)
    before = {k: getattr(session(at).inside, k) for k in fields}
    at = at.text_input(key="inside.w.typed").input(typed).run()
    no_exception(at)
    shown = errors(at)
    assert any(named in e and "Nothing changed" in e for e in shown), shown
    assert {k: getattr(session(at).inside, k) for k in fields} == before
    if "![x]" in typed:  # the word stays text: its brackets reach Markdown escaped, so no image is fetched
        assert any("\\[x\\]" in m.value for m in at.error) and not any("[x](" in m.value for m in at.error)


def test_typed_words_and_another_sequence_become_the_text() -> None:
    at = app("every_head")
    at = at.text_input(key="inside.w.typed").input("ba be bi bo ba be bi bo").run()
    no_exception(at)
    assert session(at).inside.ids == (0, 1, 2, 3, 0, 1, 2, 3)
    assert at.selectbox(key="inside.w.sequence").value == "Your own words (typed below)"
    assert not errors(at)
    want = _engine((0, 1, 2, 3, 0, 1, 2, 3))
    assert _metric(at, "Loss on the repeated half") == f"{want['repeated']:.2f} nats"
    label = [o for o in at.selectbox(key="inside.w.sequence").options if o.startswith("10 words")][0]
    at = at.selectbox(key="inside.w.sequence").set_value(label).run()
    ids = session(at).inside.ids
    assert len(ids) == 20 and ids[:10] == ids[10:]
    assert at.text_input(key="inside.w.typed").value == ENGINE.decode(list(ids))
    at = at.selectbox(key="inside.w.position").set_value(3).run()
    assert session(at).inside.position == 3
    probs = _engine(ids)["probs"][3]
    assert list(at.dataframe[0].value["next token"]) == ENGINE.pieces(list(np.argsort(-probs)[:5]))


def test_a_shorter_text_starts_the_position_again_and_keeps_the_ablations() -> None:
    at = app("every_head")
    at = at.selectbox(key="inside.w.position").set_value(22).run()
    at = head_button(at, "toggle", 0, 1).click().run()
    label = [o for o in at.selectbox(key="inside.w.sequence").options if o.startswith("8 words")][0]
    at = at.selectbox(key="inside.w.sequence").set_value(label).run()
    no_exception(at)
    assert len(session(at).inside.ids) == 16
    assert session(at).inside.position == 8 and at.selectbox(key="inside.w.position").value == 8
    assert session(at).inside.ablations == ((0, 1, "zero"),)
    want = _engine(session(at).inside.ids, (0, 1, "zero"))
    assert _metric(at, "Loss on the repeated half") == f"{want['repeated']:.2f} nats"


def test_restore_every_head_says_what_moved_back() -> None:
    at = app("every_head")
    ids = session(at).inside.ids
    at = _click(at, "inside.toggle.1.0")
    at = _click(at, "inside.toggle.1.1")
    both = _engine(ids, (1, 0, "zero"), (1, 1, "zero"))
    assert _metric(at, "Loss on the repeated half") == f"{both['repeated']:.2f} nats"
    at = _click(at, "inside.restore_all")
    clean = _engine(ids)
    assert session(at).inside.ablations == ()
    (said,) = texts(at.info)
    assert said.startswith("Restoring every head: the loss on the repeated half fell from ")
    assert f"fell from {both['repeated']:.2f} to {clean['repeated']:.2f} nats" in said
    assert _metric(at, "Loss on the repeated half") == f"{clean['repeated']:.2f} nats"


def test_no_first_layer_head_scores_as_induction_on_a_ready_made_text_so_no_note_shows() -> None:
    at = app("every_head")
    for label in at.selectbox(key="inside.w.sequence").options:
        if label.startswith("Your own"):
            continue
        at = at.selectbox(key="inside.w.sequence").set_value(label).run()
        no_exception(at)
        ids = session(at).inside.ids
        ind = _engine(ids)["ind"]
        assert ind[0].max() < 0.25 and ind[1].max() >= 0.85, (label, ind)  # induction is the second layer's job
        assert not [t for t in texts(at.caption) if "first layer" in t], label


def test_the_first_layer_note_says_how_far_back_a_head_looks() -> None:
    """A first-layer head that looks 11 back in the second half (as the model trained on fixed offsets had): the
    note counts where its strongest weight lies, checked here by a plain loop."""
    from attention.ui.headpages import every_head
    from attention.ui.modelpages import runs

    ids = tuple(int(i) for i in induction.sequences(np.random.RandomState(3), 1, 32, 12)[0])
    weights = np.tile(np.tril(np.ones((24, 24))) / np.arange(1, 25)[:, None], (2, 2, 1, 1))  # (2, 2, 24, 24)
    for t in range(12, 24):
        weights[0, 0, t] = 0.0
        weights[0, 0, t, t - 11 if t % 4 else t - 1] = 1.0  # 11 back, but 1 back at every fourth position
    now = runs.Measured(ids, (), weights, {}, np.full((2, 2), "none"), np.zeros(23), 0.0, 0.0, np.zeros((24, 32)))
    note = every_head.first_layer_note(now, 0)
    back = [t - max(range(t + 1), key=lambda s, t=t: weights[0, 0, t, s]) for t in range(12, 24)]
    assert back.count(11) == 9 and back.count(1) == 3
    assert note.startswith("Layer 1 · head 1 scores as induction")
    assert "most often 11 tokens back (9 of 12 positions): where this repeat happens to put the token to copy" in note


def test_every_positions_prediction_is_built_when_opened_and_gives_the_engines_numbers() -> None:
    from tests.helpers.apptest import open_expander

    at = app("every_head")
    at = _click(at, "inside.toggle.0.1")
    assert len(at.dataframe) == 1  # closed: only the top 5 (the table is built when the expander opens)
    at = open_expander(at, "inside.every_position")
    no_exception(at)
    ids = session(at).inside.ids
    probs = _engine(ids, (0, 1, "zero"))["probs"]  # (n, V)
    every = at.dataframe[1].value
    assert list(every["most likely next"]) == ENGINE.pieces(list(probs.argmax(-1)))
    np.testing.assert_allclose(every["p(most likely)"], probs.max(-1), rtol=1e-9)
    np.testing.assert_allclose(every["p(next in the text)"][:-1], probs[np.arange(23), ids[1:]], rtol=1e-9)


def test_each_heatmap_shows_the_engines_weights_for_the_ablations_now() -> None:
    """The heatmaps' specs are cached by content: after an ablation, a restore and another ablation every chart
    still holds the engine's own weights for the ablations of that moment (never another run's)."""
    at = app("every_head")
    ids = list(session(at).inside.ids)
    causal = np.tril(np.ones((len(ids), len(ids)), bool))
    for key in ("inside.toggle.0.1", "inside.toggle.0.1", "inside.toggle.0.0", "inside.toggle.1.1"):
        at = _click(at, key)
        want = ENGINE.run(ids, [ablate(*a) for a in session(at).inside.ablations]).weights  # (L, H, n, n)
        for k, (_, _, values) in enumerate(head_plots(at)):
            layer, head = divmod(k, 2)
            np.testing.assert_allclose(values[causal], want[layer, head][causal], rtol=1e-12)


def test_the_spec_cache_is_keyed_by_content() -> None:
    from attention import charts
    from attention.ui.headpages import every_head

    ids = list(induction.history("induction")["example"])
    clean, off = ENGINE.run(ids).weights[1, 0], ENGINE.run(ids, [ablate(0, 1)]).weights[1, 0]
    labels = [f"t{i}" for i in range(len(ids))]
    style, causal = charts.Style(kind="weights", title="layer 2 · head 1"), np.tril(np.ones(clean.shape, bool))
    a = every_head.heatmap(clean, labels, labels, style, causal)
    b = every_head.heatmap(off, labels, labels, style, causal)
    assert a is not b and a != b  # different weights never share a spec
    assert a == charts.heatmap(clean, labels, labels, style, causal)  # the same spec as built directly
    assert b == charts.heatmap(off, labels, labels, style, causal)
    assert every_head.heatmap(clean.copy(), list(labels), labels, style, causal.copy()) is a  # equal content: one spec
    assert every_head.heatmap(clean, labels, labels, style.but(title="x"), causal) is not a
    other = np.tril(np.ones(clean.shape, bool))
    other[3, 0] = False
    assert every_head.heatmap(clean, labels, labels, style, other) is not a


def test_a_new_position_reruns_what_names_it() -> None:
    """Without a change said on the page, a position only changes the predictions; after an ablation the sentence
    saying what it moved names the new position, with the engine's numbers there."""
    at = app("every_head")
    at = at.selectbox(key="inside.w.position").set_value(5).run()
    no_exception(at)
    ids = session(at).inside.ids
    probs = _engine(ids)["probs"][5]
    assert list(at.dataframe[0].value["next token"]) == ENGINE.pieces(list(np.argsort(-probs)[:5]))
    at = _click(at, "inside.toggle.1.0")
    at = at.selectbox(key="inside.w.position").set_value(20).run()
    no_exception(at)
    assert session(at).inside.position == 20
    clean, off = _engine(ids)["probs"][20], _engine(ids, (1, 0, "zero"))["probs"][20]
    said = texts(at.info)[0]
    assert f"At position 21 ({ENGINE.pieces([ids[20]])[0]}) the most likely next token" in said, said
    assert f"({clean.max():.4f} → {off.max():.4f})" in said, said  # both above 0.1: 4 digits are 4 decimals
    assert list(at.dataframe[0].value["next token"]) == ENGINE.pieces(list(np.argsort(-off)[:5]))


def test_a_refusal_goes_once_the_page_moves_on() -> None:
    """A text refused (named, nothing changed) and then another action (a position chosen): the error banner goes,
    and the box shows the text in force again. It had stayed on the page after every later action."""
    at = app("every_head")
    at = at.text_input(key="inside.w.typed").input("ba be xyz bo").run()
    assert any("'xyz', is not in the vocabulary" in e for e in errors(at)), errors(at)
    at = at.selectbox(key="inside.w.position").set_value(3).run()
    no_exception(at)
    assert not errors(at), errors(at)
    assert session(at).inside.position == 3
    assert at.text_input(key="inside.w.typed").value == ENGINE.decode(list(session(at).inside.ids))


def test_a_paste_too_long_is_named_not_dropped() -> None:
    """50,000 characters pasted into the text box reach the page (no character limit in the browser, which dropped
    the paste without a word) and are refused by their size, before anything reads them."""
    at = app("every_head")
    before = session(at).inside.ids
    assert at.text_input(key="inside.w.typed").max_chars in (None, 0)
    at = at.text_input(key="inside.w.typed").input("ba " * 16_666 + "bo").run()
    no_exception(at)
    assert any("The text has 50,000 characters; the pages read at most 12,288" in e for e in errors(at)), errors(at)
    assert session(at).inside.ids == before
