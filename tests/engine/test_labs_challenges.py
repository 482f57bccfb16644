"""Challenges: each built-in is proved solvable by an edit of only its editable matrices (found here by reasoning
or a small deterministic search) and is not met by the unedited preset; files and links refuse damage by name."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import math
import zlib
from collections.abc import Callable

import numpy as np
import pytest

import attention
from attention import AttentionError
from attention.labs import challenges as ch
from tests.helpers import ROOT

FIVE = {"she_likes_coffee", "i_am_batman", "the_cat_sat", "the_cat_sat_on_the_mat", "random_seed_42"}


def entropy_bits(row: list[float]) -> float:
    return -math.fsum(v * math.log2(v) for v in row if v > 0)


def start(cid: str) -> tuple[ch.Challenge, dict[str, np.ndarray], attention.Trace]:
    c = ch.load_challenge(cid)
    m = ch.challenge_preset(c).matrices()
    return c, m, ch.run(c)


def first_met(c: ch.Challenge, candidates, make: Callable) -> tuple[dict, attention.Trace]:
    """The first candidate whose edit meets the challenge (a deterministic search); fails the test if none does."""
    for value in candidates:
        edits = make(value)
        trace = ch.run(c, edits)  # refuses any edit of a locked matrix
        if ch.evaluate(c, trace).met:
            return edits, trace
    pytest.fail(f"no candidate meets {c.id}")


def doubling(start: float = 1.0, steps: int = 20, factor: float = 2.0) -> list[float]:
    return [start * factor**k for k in range(steps)]


# ------------------------------------------------------------------------------------------------ the eight


def test_there_are_eight_varied_built_ins() -> None:
    ids = ch.list_challenges()
    assert len(ids) == 11 and sorted(ids) == sorted(p.stem for p in (ROOT / "challenges").glob("*.json"))
    cs = [ch.load_challenge(i) for i in ids]
    assert {c.preset for c in cs} == FIVE
    assert {c.condition.kind for c in cs} == set(ch.KINDS)
    assert any(c.condition.row == ch.ALL for c in cs) and any(c.options.get("mask") == "causal" for c in cs)
    assert {e for c in cs for e in c.editable} == {"X", "W_q", "W_k", "W_v"}
    assert len({c.title for c in cs}) == 11 and [c.order for c in cs] == sorted(c.order for c in cs)
    for c in cs:
        assert ch.parse_challenge(ch.to_json(c), "again.json") == c
        assert ch.decode_link(ch.encode_link(c)) == c
        assert c.hint and c.goal


@pytest.mark.parametrize("cid", ["sat_looks_back"])
def test_sat_looks_back(cid: str) -> None:
    """X's rows are The = (1,0,1,0), cat = (0,2,0,2), sat = The + cat/2, so k_sat = k_The + k_cat/2 for any W_k and
    sat's scores are (a, b, a + b/2). Pushing k_cat against q_sat (b → −∞) leaves The on top. With u = (0, ¼, 0, ¼),
    X u = (0, 1, ½): W_k − s·u q_satᵀ subtracts s·q_sat from k_cat (and half of it from k_sat)."""
    c, m, t = start(cid)
    assert t.weights[2, 0] < 0.6 and not ch.evaluate(c, t).met
    u = np.array([0.0, 0.25, 0.0, 0.25])
    np.testing.assert_allclose(m["X"] @ u, [0.0, 1.0, 0.5])
    _, t2 = first_met(c, doubling(), lambda s: {"W_k": m["W_k"] - s * np.outer(u, t.Q[2])})
    assert t2.weights[2, 0] >= 0.6


def test_look_at_yourself() -> None:
    """Q' Kᵀ = t·I when Q' = t·pinv(K)ᵀ (K is 3 × 4 of rank 3, so K pinv(K) = I), and X pinv(X) = I (X has rank 3),
    so W_q' = pinv(X) Q' gives exactly those queries: each row's own key scores t/2, the others 0."""
    c, m, t = start("look_at_yourself")
    w = t.weights
    assert not all(np.argmax(w[i]) == i for i in range(3)) and not ch.evaluate(c, t).met
    X, K = m["X"], t.K
    assert np.linalg.matrix_rank(X) == 3 and np.linalg.matrix_rank(K) == 3
    _, t2 = first_met(c, [1.0, 2.0, 4.0, 8.0], lambda s: {"W_q": np.linalg.pinv(X) @ (s * np.linalg.pinv(K).T)})
    assert all(t2.weights[i, i] > max(np.delete(t2.weights[i], i)) for i in range(3))


def test_sharpen_cat() -> None:
    """Scaling W_q by s scales every score of a row by s: the gaps grow and the row tends to one-hot (0 bits)."""
    c, m, t = start("sharpen_cat")
    assert entropy_bits(t.weights[1].tolist()) > 0.2 and not ch.evaluate(c, t).met
    _, t2 = first_met(c, doubling(), lambda s: {"W_q": s * m["W_q"]})
    assert entropy_bits(t2.weights[1].tolist()) <= 0.2


def test_causal_on_sees_cat() -> None:
    """X (6 × 8) has rank 6, so X pinv(X) = I and W_k + pinv(X) ΔK changes K by exactly ΔK = s·e_cat q_onᵀ: only
    cat's key moves, towards on's query, raising score(on, cat) by s|q_on|²/√8."""
    c, m, t = start("causal_on_sees_cat")
    assert t.options.mask == ("causal",) and np.isneginf(t.scaled[0, 3, 4:]).all()  # 'on' cannot see 'the' or 'mat'
    assert np.argmax(t.weights[0, 3]) == 3 and not ch.evaluate(c, t).met
    X = m["X"][0]
    assert np.linalg.matrix_rank(X) == 6
    q_on = t.Q[0, 3]

    def edit(s: float) -> dict:
        dK = np.zeros((6, 8))
        dK[1] = s * q_on / (q_on @ q_on)
        return {"W_k": m["W_k"] + np.linalg.pinv(X) @ dK}

    _, t2 = first_met(c, doubling(), edit)
    row = t2.weights[0, 3]
    assert np.argmax(row) == 1 and (row[4:] == 0).all()


def test_spread_out() -> None:
    """Scaling W_q down shrinks every score towards 0, where softmax is uniform: log₂ 6 ≈ 2.585 bits per row."""
    c, m, t = start("spread_out")
    assert min(entropy_bits(r) for r in t.weights[0].tolist()) < 2.4 and not ch.evaluate(c, t).met
    _, t2 = first_met(c, doubling(1.0, 20, 0.5), lambda s: {"W_q": s * m["W_q"]})
    assert all(entropy_bits(r) >= 2.4 for r in t2.weights[0].tolist())


def test_focus_every_row() -> None:
    """Every row of random_seed_42 (seed 42) has one clearly largest score; scaling W_k up by s multiplies every gap
    by s, so each row tends to one-hot."""
    c, m, t = start("focus_every_row")
    assert c.seed == 42 and not ch.evaluate(c, t).met
    _, t2 = first_met(c, doubling(), lambda s: {"W_k": s * m["W_k"]})
    assert all(entropy_bits(r) <= 0.5 for r in t2.weights.tolist())


def test_wake_up_am() -> None:
    """x_am = 0 makes the row of 'am' uniform (1/3 < 0.5). A grid search over x_am finds an embedding that works; the
    algebra says why it must have x1 + x2 < 0: with M = W_qᵀ W_k, score(am, Batman) − score(am, I) = −(x1 + x2)."""
    c, m, t = start("wake_up_am")
    assert (m["X"][1] == 0).all() and np.allclose(t.weights[1], 1 / 3) and not ch.evaluate(c, t).met
    grid = [(a, b) for a in np.arange(-5, 5.01, 0.5) for b in np.arange(-5, 5.01, 0.5)]

    def edit(x: tuple[float, float]) -> dict:
        X = m["X"].copy()
        X[1] = x
        return {"X": X}

    edits, t2 = first_met(c, grid, edit)
    x1, x2 = edits["X"][1]
    assert x1 + x2 < 0 and t2.weights[1, 2] >= 0.5
    Wq, Wk = m["W_q"], m["W_k"]  # x_wt: q = W_q x, k = W_k x
    q = Wq @ edits["X"][1]
    assert q @ (Wk @ m["X"][2]) - q @ (Wk @ m["X"][0]) == pytest.approx(-(x1 + x2))


def test_negative_output() -> None:
    """Weights are positive and sum to 1, so an output is a weighted average of the value rows: negating W_v's first
    column negates V's first column (X is positive), and with it the output's."""
    c, m, t = start("negative_output")
    assert (m["X"] > 0).all() and (m["W_v"] > 0).all() and t.output[1, 0] > 0 and not ch.evaluate(c, t).met
    Wv = m["W_v"].copy()
    Wv[:, 0] *= -1
    t2 = ch.run(c, {"W_v": Wv})
    np.testing.assert_array_equal(t2.weights, t.weights)  # W_v does not touch the weights
    assert t2.output[1, 0] == pytest.approx(-t.output[1, 0]) and ch.evaluate(c, t2).met


# ------------------------------------------------------------------------------------------------ evaluate


def test_locked_matrices_are_refused_and_a_locked_edit_blocks_progress() -> None:
    c, m, t = start("sat_looks_back")
    assert ch.locked_edit(c, "W_k") is None
    assert ch.locked_edit(c, "W_q") == "W_q is locked in this challenge: you may edit only W_k."
    assert "not an input matrix" in ch.locked_edit(c, "scores")
    with pytest.raises(AttentionError, match="W_q is locked") as info:
        ch.run(c, {"W_q": m["W_q"] * 2})
    assert info.value.matrix == "W_q"
    Wq = m["W_q"].copy()
    Wq[0, 0] += 1e-12
    cheat = attention.self_attention(m["X"], Wq, m["W_k"], m["W_v"], tokens=("The", "cat", "sat"))
    p = ch.evaluate(c, cheat)
    assert not p.met and p.blocked and "W_q was edited" in p.blocked


def test_a_batch_of_one_held_as_its_single_sentence_is_not_an_edit() -> None:
    """The dashboard holds X (1, n, d) as (n, d): the same numbers, so the locked X is untouched and progress reads."""
    c, m, t = start("causal_on_sees_cat")
    assert m["X"].shape == (1, 6, 8)
    flat = attention.self_attention(m["X"][0], m["W_q"], m["W_k"], m["W_v"], tokens=t.tokens, options=t.options)
    p = ch.evaluate(c, flat)
    assert p.blocked is None and p.description.startswith("'on' attends most to 'on'")
    X = m["X"][0].copy()
    X[0, 0] += 1.0
    edited = attention.self_attention(X, m["W_q"], m["W_k"], m["W_v"], tokens=t.tokens, options=t.options)
    assert "X was edited" in ch.evaluate(c, edited).blocked


def test_other_options_or_tokens_block_progress() -> None:
    c, m, t = start("causal_on_sees_cat")
    plain = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=t.tokens)
    p = ch.evaluate(c, plain)
    assert not p.met and "mask is 'none' (the challenge uses 'causal')" in p.blocked
    renamed = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=list("abcdef"), mask="causal")
    assert "other tokens" in ch.evaluate(c, renamed).blocked


def test_a_changed_mask_is_said_in_words_and_unmarked_padding_is_no_padding() -> None:
    """Issue 48 §6: a changed mask is named in words, never as a Python value ("(False, False, False)"), and padding
    flags that mark no token count as none (they change nothing)."""
    import dataclasses

    c, m, t = start("causal_on_sees_cat")
    n = len(t.tokens)

    def said(options: object) -> ch.Progress:
        trace = attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=t.tokens, options=options)
        return ch.evaluate(c, trace)

    padded = dataclasses.replace(t.options, mask=("causal", "padding"), padding=(False,) * n)
    blocked = said(padded).blocked
    assert "mask is 'causal+padding' (the challenge uses 'causal')" in blocked
    assert "False" not in blocked and "()" not in blocked, blocked
    assert said(dataclasses.replace(t.options, padding=(False,) * n)).blocked is None  # flags, none set: the same
    blocked = said(dataclasses.replace(padded, padding=(False, True) + (False,) * (n - 2))).blocked
    assert "padding is on token 2 (the challenge uses on no token)" in blocked, blocked


def test_progress_for_every_row_reports_the_furthest_row() -> None:
    c, m, t = start("spread_out")
    p = ch.evaluate(c, t)
    ents = [entropy_bits(r) for r in t.weights[0].tolist()]
    assert (p.rows_met, p.rows_total) == (sum(e >= 2.4 for e in ents), 6)
    assert p.value == pytest.approx(min(ents), rel=1e-12) and p.target == 2.4
    assert "'on'" in p.description and p.description.startswith("0 of 6 rows")


def test_argmax_progress_names_the_current_top() -> None:
    c, m, t = start("causal_on_sees_cat")
    p = ch.evaluate(c, t)
    row = t.weights[0, 3]
    assert p.value == row[1] and p.target == max(row[0], row[2], row[3], row[4], row[5])
    assert p.description.startswith("'on' attends most to 'on'")


def test_a_fully_masked_row_cannot_meet_a_goal() -> None:
    text = json.loads((ROOT / "challenges" / "sharpen_cat.json").read_text(encoding="utf-8"))
    text["options"] = {"mask": "custom", "custom_mask": [[True] * 3, [False] * 3, [True] * 3]}
    c = ch.parse_challenge(json.dumps(text), "masked.json")
    p = ch.evaluate(c, ch.run(c))
    assert not p.met and "fully masked" in p.description


# ------------------------------------------------------------------------------------------------ parsing


def good() -> dict:
    return json.loads((ROOT / "challenges" / "sat_looks_back.json").read_text(encoding="utf-8"))


def refused(data: dict | str | bytes, match: str) -> AttentionError:
    text = data if isinstance(data, (str, bytes)) else json.dumps(data)
    with pytest.raises(AttentionError, match=match) as info:
        ch.parse_challenge(text, "t.json")
    assert str(info.value).startswith("t.json: ")
    return info.value


def changed(path: str, value) -> dict:
    d = good()
    *parents, last = path.split(".")
    node = d
    for p in parents:
        node = node[p]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return d


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        ("colour", "red", r"field 'colour' is not a known field"),
        ("title", 5, r"field 'title' must be text, got a number"),
        ("goal", KeyError, r"field 'goal' is missing"),
        ("format", "attention-challenge/2", r"field 'format' must be 'attention-challenge/1'"),
        ("id", "no spaces", r"field 'id' must be letters"),
        ("preset", "the_dog_sat", r"field 'preset' names no preset here"),
        ("editable", ["W_k", "W_o"], r"field 'editable\[1\]' must be one of X, W_q, W_k, W_v"),
        ("editable", [], r"field 'editable' must be a non-empty list"),
        ("seed", True, r"field 'seed' must be a whole number"),
        ("options", {"temperature": 0}, r"field 'options.temperature' must be a finite number > 0"),
        ("options", {"heads": 2}, r"field 'condition.head' is missing: weights has 2 heads here"),
        ("options", {"colour": 1}, r"field 'options.colour' is not a known field"),
        ("options", {"mask": "padding"}, r"field 'options' does not work with preset 'the_cat_sat'"),
        ("condition.type", "max", r"field 'condition.type' must be one of cell, argmax, entropy"),
        ("condition.array", "attention", r"field 'condition.array' must be one of the trace's arrays"),
        ("condition.op", "=>", r"field 'condition.op' must be one of <, <=, >, >="),
        ("condition.value", "0.6", r"field 'condition.value' must be a number, got text"),
        ("condition.value", True, r"field 'condition.value' must be a number, got true/false"),
        ("condition.row", 3, r"field 'condition.row' is 3, but the array has 3 rows \(indices 0 to 2\)"),
        ("condition.row", -1, r"field 'condition.row' is -1"),
        ("condition.col", "dog", r"field 'condition.col' 'dog' is no token; the tokens are 'The', 'cat', 'sat'"),
        ("condition.row", 1.0, r"field 'condition.row' must be a whole-number index, a token or 'all'"),
        ("condition.extra", 1, r"field 'condition.extra' is not a known field"),
    ],
)
def test_schema_errors_name_the_field(path: str, value, match: str) -> None:
    refused(changed(path, value), match)


@pytest.mark.parametrize(
    ("key", "value"),
    [("heads", 257), ("heads", "2"), ("scale", "big"), ("temperature", 0), ("mask", 5), ("custom_mask", [[1]])],
)
def test_options_are_read_as_a_presets_are(key: str, value) -> None:
    """One reader of options from JSON (attention.options.from_json): a challenge's override and a preset file's
    option give the same message, with the limits of attention.names (257 heads > MAX_DIM)."""
    preset = json.loads(attention.load_preset("the_cat_sat").to_json())
    preset["options"][key] = value
    with pytest.raises(AttentionError) as from_preset:
        attention.parse_preset(json.dumps(preset), "p.json")
    from_challenge = refused(changed("options", {key: value}), rf"field 'options\.{key}' ")
    message = from_preset.value.message.split(f"field 'options.{key}' ", 1)[1]
    if key == "custom_mask":  # a preset knows its n tokens, a challenge's override is sized by its preset later
        assert message.startswith("must be 3 rows of 3 true/false flags")
        assert "must be a list of rows of true/false flags" in from_challenge.message
    else:
        assert from_challenge.message.endswith(f"field 'options.{key}' {message}")


def test_condition_rules_that_depend_on_the_array() -> None:
    d = changed("condition", {"type": "entropy", "array": "scores", "row": "sat", "op": "<", "value": 1})
    refused(d, r"field 'condition.array' must be 'weights' for an entropy")
    d = changed("condition", {"type": "cell", "array": "output", "row": "sat", "col": "self", "op": "<", "value": 1})
    refused(d, r"field 'condition.col' 'self' needs a queries × keys array")
    d = changed("condition", {"type": "cell", "array": "Q", "row": "sat", "col": "cat", "op": "<", "value": 1})
    refused(d, r"field 'condition.col' must be a column index here")
    d = changed("condition", {"type": "cell", "array": "W_q", "row": 0, "col": 4, "op": "<", "value": 1})
    refused(d, r"field 'condition.col' is 4, but the array has 4 columns")
    d = changed("condition", {"type": "argmax", "row": "sat"})
    refused(d, r"field 'condition.col' is missing")


def test_a_token_that_occurs_twice_must_be_given_by_index() -> None:
    d = good() | {"preset": "glove_the_cat_sat_on_the_mat"}
    d["condition"] = {"type": "argmax", "row": "the", "col": "cat"}
    refused(d, r"field 'condition.row' 'the' occurs 2 times \(give its index\)")
    d["condition"]["row"] = 4
    assert ch.parse_challenge(json.dumps(d), "t.json").condition.row == 4


def test_bounds_size_depth_numbers() -> None:
    d = good()
    d["hint"] = "x" * (ch.MAX_BYTES + 1)
    refused(d, r"the challenge is too large \(64.\d KB\); the limit is 64 KB")
    refused(json.dumps(d).encode(), r"too large")
    deep = json.dumps(good())[:-1] + ', "options": ' + "[" * 50 + "]" * 50 + "}"
    refused(deep, r"nested 51 levels deep; a file here nests at most 6")
    refused(json.dumps(changed("condition.value", 0.6)).replace("0.6", "NaN"), r"'condition.value' is NaN")
    refused(json.dumps(changed("title", "x")).replace('"x"', "Infinity"), r"'title' must be text, got Infinity")
    refused(json.dumps(changed("condition.value", 7)).replace(": 7", ": 1" + "0" * 400), r"too large for a 64-bit")
    refused(json.dumps(changed("condition.row", 7)).replace(": 7", ": 1" + "0" * 30), r"must be a whole-number")
    refused(json.dumps(changed("seed", 7)).replace(": 7", ": " + "9" * 5000), r"'seed' must be a whole number")
    refused(b"\xff\xfe{}", r"not UTF-8")
    refused("{", r"not valid JSON")
    refused("[]", r"field '\(top level\)' must be an object, got a list")


def test_text_is_stored_as_given() -> None:
    title = "<b>**bold**</b> [link](javascript:alert(1)) $x$"
    c = ch.parse_challenge(json.dumps(good() | {"title": title, "hint": ""}), "t.json")
    assert c.title == title and c.hint == ""
    assert ch.parse_challenge(ch.to_json(c), "t.json").title == title
    assert ch.decode_link(ch.encode_link(c)).title == title


# ------------------------------------------------------------------------------------------------ links


def forge(payload: bytes, version: str = "c1") -> str:
    """A token with a VALID checksum around any payload, as a tamperer who read the code could make it."""
    compressed = zlib.compress(payload, 9)
    digest = hashlib.sha256(b"attention-challenge/v1" + compressed).digest()[:8]
    return f"{version}." + base64.urlsafe_b64encode(digest + compressed).rstrip(b"=").decode()


def link_refused(token, match: str) -> None:
    with pytest.raises(AttentionError, match=match):
        ch.decode_link(token)


def test_links_are_compact_and_every_single_character_change_is_refused() -> None:
    c = ch.load_challenge("sat_looks_back")
    token = ch.encode_link(c)
    assert (
        token.startswith("c1.")
        and len(token) < len(ch.to_json(c))
        and set(token[3:]) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    )
    assert token == forge(ch.to_json(c, compact=True).encode())  # the documented format, rebuilt independently
    for k in range(3, len(token)):
        for ch_ in ("A", "_"):
            if token[k] != ch_:
                bad = token[:k] + ch_ + token[k + 1 :]
                with pytest.raises(AttentionError, match="the challenge link cannot be read"):
                    ch.decode_link(bad)
    link_refused(token[:-5], "changed or cut short")


def test_damaged_links_are_refused_with_a_reason() -> None:
    token = ch.encode_link(ch.load_challenge("wake_up_am"))
    link_refused("x" * (ch.MAX_LINK_CHARS + 1), r"at most 16,384")
    link_refused("v1." + token[3:], r"does not start with a version such as 'c1.'")
    link_refused("c2." + token[3:], r"made in format 'c2'")
    link_refused(token[:-1] + "!", r"not valid base64url")
    link_refused(12, r"expected text")
    link_refused(forge(b"\x00" * (ch.MAX_BYTES + 10)), r"unpacks to more than 64 KB")
    link_refused(forge(b"not json"), r"the challenge link: not valid JSON")
    payload = json.loads(ch.to_json(ch.load_challenge("wake_up_am"), compact=True))
    payload["editable"] = ["W_o"]
    link_refused(forge(json.dumps(payload).encode()), r"the challenge link: field 'editable\[0\]'")
    assert len(forge(b"\x00" * 10_000_000)) < ch.MAX_LINK_CHARS  # a bomb fits in a link, yet is refused unpacked
    link_refused(forge(b"\x00" * 10_000_000), r"unpacks to more than")


# Links made by the dashboard before the link envelope was shared with the edit links.
OLD_LINKS = {
    "sat_looks_back": (
        "c1.dN3UTQLxzRZ42m2RwW7bMAyGX4XQxRfPS7aiBwPrfcB2GQZsQ1EEjM3YgmXJE-mmRtF3L-msK4LkRvEnP_6knt0h5RHF1Q5FK"
        "IpP8UPTYwgUO_q4daXzrYqMsgspDbzbYzNoVrwEUuE7DgSFygWYDiYDChQ_eyq0bsrEZHjpadcoRUs1nXJL2dXbalO6LmE4J3X-k"
        "QwSCFlgU91COoAXhv8eQdJpRAV_0gwjLkCtF0gxLPBrN5Sg8zQt2T9pqKxR8bxmB1q4Ug9NitqiMFc_O1kmW6ehEFTCnHHR55F81"
        "wtrJqfj6Qxro_nV6bbIpOHdF40eMcyKULcvpTMzuLcL3Tu14x5K1_tod_hmV1I_v-vVDI17alsfO1vxtL3nK4rtClOYGfRzDlcK9"
        "LZFCZzeVjzjYTjiwmfSFeCbZKgKfqBng180ZRWIL-dIShV8jSyEbQnTzP0FFVB9wCGncZX-zpTfAfW_mtnoem-GT4CxhRurWP_0N"
        "P9d367658q9vAInF-ez"
    ),
    "mqa_two_views": (
        "c1.S3B5Dw7VKjx42mWTz27bMAzGX4XQxS3gJnO2k3faYaegGAYMHYZhMBibsQ3_kS3J8Ywiz9V7n2yklBpZeotJivz445dnddSmQ"
        "6dShc5R72rdP-QVti31JW0TFau64GQ3YuZmnZ1qmi0HXe1a4vi3nqChZXvCdiKoCIsYuA5mXCzoI7RaN3VfpuAm0_s87CQeWXQRO"
        "A3Rj4oibjgYsiQyXEVZji7jAg5rU5BRaZJsPsSq1NhyxePUuvphnMgssIpOuW8IyRALtkJDkLwTZzUctKvAiBSeBRY7v4IF7Avwp"
        "XYDX1xIOjQuPAhtV-l-cAGdts6vwZKjDTxiQ--2vC2Vjb0QV2EYI8Ru-gs4fglFfTyS4R35aUO9hbmqW_LrMVfQzJ-5yTvZYQO_9"
        "AQdLkBFzdG-XeBnNm6YZK57DjEplT4rtwxyPTRlh385icbgwoGZ6rJycmCjZ_4OR8i1YGfZ_Ftk8j3OsZIJeBAX_FY8Q_3hZN27U"
        "HkhaoJSKuBO9vz--rJ_fXmCAUtJ6Nles5WTyE777RMcWp03kNx7Tn4NeR8OnGMPbFH2J8NgNoABuSBjAqwFKrQeTWjDcHiFqWN6A"
        "5krm6QwJv7s485r9W2SyMYwfgzxT5drRtz464r0Lba2vT5maL8esl5tP2jGw1BazUu6wMjXiSHgLtfdICKY_CXEuf3954sqrqbBv"
        "v2hxBrec7HX-b-JLoZjr926R4ygB3GBFRv4cpXuYtWcsstHcj7_A_s8X8Y"
    ),
}


@pytest.mark.parametrize("cid", list(OLD_LINKS))
def test_a_link_made_by_the_earlier_code_still_opens(cid: str) -> None:
    """A link made before the envelope was shared opens as the challenge it carried (the built-in's hint has been
    rewritten since, so the texts may differ), and the code today writes that challenge as the same token."""
    old = ch.decode_link(OLD_LINKS[cid])
    now = ch.load_challenge(cid)
    assert dataclasses.replace(old, hint=now.hint, goal=now.goal) == now
    assert ch.encode_link(old) == OLD_LINKS[cid]


def test_a_challenge_too_big_for_a_link_says_so() -> None:
    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz0123456789")
    noise = "".join(rng.choice(letters, 26_000))  # random text: zlib cannot shrink it below ~5.2 bits a character
    c = ch.parse_challenge(json.dumps(good() | {"hint": noise[:2000], "goal": noise[2000:4000]}), "t.json")
    assert ch.decode_link(ch.encode_link(c)) == c  # 4,000 random characters still fit
    big = ch.Challenge(**{**c.__dict__, "hint": noise})  # longer than a file allows, made in code
    with pytest.raises(AttentionError, match="share its JSON file instead"):
        ch.encode_link(big)


def test_a_resized_editable_matrix_that_drops_the_cell_blocks_progress() -> None:
    c, m, t = start("negative_output")  # reads output column 0 of 'token2'
    d = good() | {"preset": "random_seed_42", "seed": 42, "editable": ["W_v"]}
    d["condition"] = {"type": "cell", "array": "output", "row": "token2", "col": 3, "op": "<", "value": 0}
    c = ch.parse_challenge(json.dumps(d), "t.json")
    p = ch.evaluate(c, ch.run(c, {"W_v": m["W_v"][:, :2]}))  # d_v 4 -> 2: column 3 is gone
    assert not p.met and p.blocked == "output now has 2 columns; this challenge reads its column 3"
    assert ch.evaluate(c, ch.run(c, {"W_v": -m["W_v"]})).met


# ------------------------------------------------------------------------------------------------ grouped heads


def test_mqa_two_views_starts_unmet_with_both_heads_on_cat_and_w_k_pooled_to_one_block() -> None:
    c = ch.load_challenge("mqa_two_views")
    assert c.condition.head == 1 and c.options == {"heads": 2, "kv_heads": 1} and c.editable == ("W_q",)
    base = attention.load_preset("the_cat_sat").matrices()
    m = ch.challenge_preset(c).matrices()
    for name in ("W_k", "W_v"):  # one shared block: the mean of the two heads' blocks (the GQA paper's pooling)
        np.testing.assert_array_equal(m[name], (base[name][:, :2] + base[name][:, 2:]) / 2)
    t = ch.run(c)
    assert t.weights.shape == (2, 3, 3)
    assert [int(np.argmax(t.weights[h, 2])) for h in (0, 1)] == [1, 1]  # both heads of 'sat' on 'cat'
    p = ch.evaluate(c, t)
    assert not p.met and p.description.startswith("head 2: 'sat' attends most to 'cat'")


def test_mqa_two_views_is_met_by_an_edit_of_head_2s_block_of_w_q_alone_and_head_1_keeps_cat() -> None:
    """With the keys shared, head 2's query of 'sat' must point along a d with d·(k_The − k_cat) > 0 and
    d·(k_The − k_sat) > 0; the 2 × 2 solve gives one. W_q's head-2 block = s · u dᵀ with x_sat · u > 0 (u from the
    pseudo-inverse of X; X has rank 2, sat = The + cat/2), so head 2's query of 'sat' is a positive multiple of d."""
    c, m, t = start("mqa_two_views")
    K = t.K  # (3, 2): the one shared key block
    d = np.linalg.solve(np.array([K[0] - K[1], K[0] - K[2]]), np.ones(2))  # (2,)
    u = np.linalg.pinv(m["X"])[:, 2]  # (4,)
    assert (m["X"] @ u)[2] > 0.5

    def edit(s: float) -> dict:
        W_q = m["W_q"].copy()
        W_q[:, 2:] = s * np.outer(u, d)  # head 2's columns q3, q4
        return {"W_q": W_q}

    edits, t2 = first_met(c, doubling(), edit)
    assert int(np.argmax(t2.weights[1, 2])) == 0  # head 2 of 'sat' on 'The'
    np.testing.assert_array_equal(t2.weights[0], t.weights[0])  # head 1 untouched: 'sat' still on 'cat'
    assert int(np.argmax(t2.weights[0, 2])) == 1
    with pytest.raises(AttentionError, match="W_k is locked"):
        ch.run(c, {"W_k": m["W_k"]})


def test_a_head_is_named_only_where_the_array_has_heads_and_within_them() -> None:
    heads = changed("options", {"heads": 2, "kv_heads": 1})
    refused(heads, r"field 'condition.head' is missing: weights has 2 heads here; name one \(0 to 1\)")
    heads["condition"]["head"] = 2
    refused(heads, r"field 'condition.head' must be a whole number from 0 to 1, got 2")
    heads["condition"]["head"] = True
    refused(heads, r"field 'condition.head' must be a whole number from 0 to 1")
    one = good()
    one["condition"]["head"] = 0
    refused(one, r"field 'condition.head' names a head, but weights has no head axis here")
    heads["condition"]["head"] = 0
    c = ch.parse_challenge(json.dumps(heads), "t.json")
    assert c.condition.head == 0 and json.loads(ch.to_json(c))["condition"]["head"] == 0
    assert ch.decode_link(ch.encode_link(c)) == c
    refused(changed("options", {"heads": 3, "kv_heads": 1}), r"field 'options'")  # 3 heads do not divide d_k = 4


def test_files_without_a_head_read_and_write_as_before() -> None:
    for cid in ch.list_challenges():
        c = ch.load_challenge(cid)
        raw = json.loads((ROOT / "challenges" / f"{cid}.json").read_text(encoding="utf-8"))
        assert ("head" in raw["condition"]) == (c.condition.head is not None)
        assert json.loads(ch.to_json(c))["condition"] == raw["condition"]


def test_a_cross_attention_trace_does_not_count_for_a_challenge() -> None:
    c = ch.load_challenge("sat_looks_back")
    m = ch.challenge_preset(c).matrices()
    t = attention.cross_attention(m["X"], m["X"], m["W_q"], m["W_k"], m["W_v"], tokens=("The", "cat", "sat"))
    p = ch.evaluate(c, t)
    assert not p.met and "cross-attention" in (p.blocked or "")


def test_a_state_with_a_w_o_or_learned_positions_does_not_count() -> None:
    """W_o and P are never editable in a challenge: a link that brings them (as a link's edits can) is blocked."""
    c = ch.load_challenge("negative_output")
    preset = ch.challenge_preset(c)
    m = preset.matrices()
    m["W_v"][0, 0] = -10.0
    mats = (m["X"], m["W_q"], m["W_k"], m["W_v"])
    solved = attention.self_attention(*mats, tokens=preset.tokens, options=preset.options)
    assert ch.evaluate(c, solved).met
    d_v = m["W_v"].shape[1]
    with_w_o = attention.self_attention(*mats, W_o=np.eye(d_v), tokens=preset.tokens, options=preset.options)
    p = ch.evaluate(c, with_w_o)
    assert not p.met and "W_o differs from the challenge's start" in p.blocked
