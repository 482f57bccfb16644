"""The copy check's rule on the cases of issue 48 §3, one cell beyond the hint each: the hint's followers are not
flagged, the exact copy (-10) and the near copy (-10.001) are, a number of one's own (-7.5) is not."""

from __future__ import annotations

from attention.labs.copies import Edit, compare, near_copies


def _hand_in(value: str) -> list[Edit]:
    """The hint's cell W_v d1·v1 = -10 (named by the hint), and one cell of one's own, W_v d2·v1."""
    return [Edit("W_v", "0", "0", "-10.0", True), Edit("W_v", "1", "0", value, False)]


def test_one_cell_beyond_the_hint_is_flagged_when_copied_exactly_or_within_a_thousandth() -> None:
    ana, ben, dee, eve = _hand_in("-10.0"), _hand_in("-10.0"), _hand_in("-10.001"), _hand_in("-7.5")
    followers = [[Edit("W_v", "0", "0", "-10.0", True)] for _ in range(4)]
    assert "to the digits typed" in compare(ana, ben)
    assert "within 0.1%" in compare(ana, dee) and "-10.0 and -10.001" in compare(ana, dee)
    assert compare(ana, eve) is None and compare(dee, eve) is None
    assert all(compare(a, b) is None for a in followers for b in followers)  # nothing beyond the hint
    assert compare(ana, ana + [Edit("W_v", "3", "2", "0.5", False)]) is None  # another cell changed too


def test_the_board_names_exactly_the_copied_pairs() -> None:
    import json

    rows = {"Hal": [["W_v", "0", "0", "-10.0", True]], "Ida": [["W_v", "0", "0", "-10.0", True]]}
    rows |= {name: [["W_v", "0", "0", "-10.0", True], ["W_v", "1", "0", v, False]]
             for name, v in (("Ana", "-10.0"), ("Ben", "-10.0"), ("Dee", "-10.001"), ("Eve", "-7.5"))}
    flagged = near_copies([(name, json.dumps(r)) for name, r in rows.items()])
    assert [pair for pair, _ in flagged] == [("Ana", "Ben"), ("Ana", "Dee"), ("Ben", "Dee")]
