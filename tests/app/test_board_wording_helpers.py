"""The class board's wording helpers (issue 41 §3), which live in modules that import Streamlit, so they are tested
in the app tier; the static checks of every board message are tests/engine/test_board_wording.py."""

from __future__ import annotations


def test_a_message_ending_in_a_full_stop_is_never_followed_by_another() -> None:
    """A store's message (ending in ".") put before one of ours goes through a clause helper, never "{}. …." raw."""
    from attention.ui.state.board import _clause

    assert _clause("Choose a student first.") + "." == "Choose a student first."
    from attention.io.board import _no_student

    assert _no_student("", "K7QX2M") == "Choose a student first."  # never "There is no student ''"


def test_counts_go_through_the_plural_helper() -> None:
    from attention.ui.labpages.board import plural

    assert [plural(n, "student") for n in (0, 1, 2)] == ["0 students", "1 student", "2 students"]
    assert [plural(n, "challenge") for n in (1, 3)] == ["1 challenge", "3 challenges"]
