"""A challenge is part of the state (issue 20 §1): the address carries it, so a reload keeps it with the student's
edits, her link hands it in (anyone who opens it sees it solved, recomputed by the server from the link's numbers),
the sidebar of every page says where it stands, and Start offers the way back to what it replaced."""

from __future__ import annotations

import numpy as np

import attention
from attention.labs import challenges as ch
from tests.helpers.apptest import edit_cells, goto, journey, no_exception, select, session, texts

CID = "negative_output"


def _start(at, cid: str = CID):
    at = select(at, "ch.choice", cid)
    return at.button(key="ch.start.builtin").click().run()


def _solve(at):
    cols = session(at).axis_labels("W_v", session(at).matrices["W_v"].shape)[1]
    return edit_cells(at, "W_v", {0: {cols[0]: "-10"}})


def _address(at) -> dict[str, str]:
    return {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}


def _sidebar(at) -> list[str]:
    return texts(at.sidebar.success) + texts(at.sidebar.info) + texts(at.sidebar.warning)


def test_a_reload_keeps_the_challenge_and_the_students_edits() -> None:
    at = _solve(_start(journey("challenges")))
    address = _address(at)
    assert "playing" in address and "edits" in address
    again = journey("challenges", address)  # a reload: a new session from the address alone
    no_exception(again)
    s = session(again)
    assert s.challenge == ch.load_challenge(CID)
    assert s.matrices["W_v"][0, 0] == -10.0
    assert any(t.startswith("✓ Goal met") for t in texts(again.success)), texts(again.success)


def test_a_hand_in_link_opens_solved_for_anyone_on_any_page() -> None:
    at = _solve(_start(journey("challenges")))
    link = _address(at)
    teacher = journey("softmax", link)  # another browser, another page
    no_exception(teacher)
    assert any("✓ solved" in t and "A negative output" in t for t in _sidebar(teacher)), _sidebar(teacher)
    m = ch.challenge_preset(ch.load_challenge(CID)).matrices()  # the oracle: the engine on the link's numbers
    m["W_v"][0, 0] = -10.0
    assert attention.self_attention(m["X"], m["W_q"], m["W_k"], m["W_v"]).output[1, 0] < 0


def test_an_unsolved_or_forged_link_does_not_show_solved() -> None:
    at = _start(journey("challenges"))
    unsolved = journey("overview", _address(at))
    assert any("not yet" in t for t in _sidebar(unsolved)) and not any("✓" in t for t in _sidebar(unsolved))
    # a link that edits W_q, which this challenge locks (made by a session without the challenge, then relabelled)
    free = journey("weights", {"preset": _address(at)["preset"], "seed": _address(at).get("seed", "")})
    cols = session(free).axis_labels("W_q", session(free).matrices["W_q"].shape)[1]
    free = edit_cells(free, "W_q", {0: {cols[0]: "-10"}})
    forged = {**_address(free), "playing": _address(at)["playing"]}
    opened = journey("challenges", {k: v for k, v in forged.items() if v})
    no_exception(opened)
    assert any("does not count" in t for t in _sidebar(opened)), _sidebar(opened)
    assert not any("✓" in t for t in _sidebar(opened) + texts(opened.success))


def test_a_garbled_running_challenge_is_named_and_the_numbers_still_open() -> None:
    at = _solve(_start(journey("challenges")))
    address = {**_address(at), "playing": _address(at)["playing"][:-6] + "AAAAAA"}
    opened = journey("softmax", address)
    no_exception(opened)
    assert session(opened).challenge is None and session(opened).matrices["W_v"][0, 0] == -10.0
    shown = " ".join(texts(opened.warning) + texts(opened.info) + texts(opened.error))
    assert "running challenge could not be read" in shown, shown


def test_start_says_what_it_replaces_and_back_brings_it_back() -> None:
    at = journey("weights", {"preset": "the_cat_sat"})
    cols = session(at).axis_labels("W_q", session(at).matrices["W_q"].shape)[1]
    at = edit_cells(at, "W_q", {0: {cols[0]: "7"}})
    before = {k: v.copy() for k, v in session(at).matrices.items()}
    at = goto(at, "challenges")
    assert any("Start replaces the numbers on every page" in c.value for c in at.caption)
    at = _start(at)
    assert session(at).challenge is not None and session(at).preset_id != "the_cat_sat"
    at = at.button(key="ch.back").click().run()
    no_exception(at)
    s = session(at)
    assert s.challenge is None and s.preset_id == "the_cat_sat"
    assert all(np.array_equal(s.matrices[k], before[k]) for k in before)
    assert "playing" not in _address(at)
