"""The class board's store: classes, students and solves in SQLite (one server) and in a real PostgreSQL server
shared by two replicas (two processes), each class readable only by its own code, surviving a restart."""

from __future__ import annotations

import csv
import io
import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from attention.io.board import CODE_ALPHABET, Board, BoardError, normal_code, solves_csv
from tests.helpers.postgres import postgres_server

LINK = "http://localhost:8501/softmax?p=the_cat_sat&challenge=abc"


@pytest.fixture()
def board(tmp_path: Path) -> Board:
    return Board(f"sqlite:///{tmp_path / 'board.sqlite3'}")


def test_a_class_from_opening_to_the_board_survives_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'board.sqlite3'}"
    first = Board(url)
    code = first.open_class("Tuesday lab")
    assert len(code) == 6 and set(code) <= set(CODE_ALPHABET)
    ada, bob = first.join(code, "Ada"), first.join(code, "  Bob   Smith ")
    assert first.record(code, ada, "sharpen", "Sharpen one row", LINK + "1")
    assert first.record(code, bob, "sharpen", "Sharpen one row", LINK + "2")
    assert first.record(code, ada, "uniform", "Make it uniform", LINK + "3")
    first.engine.dispose()  # the server stops

    again = Board(url)  # ... and starts again on the same file
    assert again.title(code) == "Tuesday lab"
    assert again.roster(code) == ["Ada", "Bob Smith"]
    got = [(s.name, s.challenge_id, s.link) for s in again.solves(code)]
    assert got == [("Ada", "sharpen", LINK + "1"), ("Bob Smith", "sharpen", LINK + "2"), ("Ada", "uniform", LINK + "3")]
    assert all(s.solved_at.tzinfo is not None for s in again.solves(code))
    assert again.record(code, ada, "sharpen", "Sharpen one row", LINK + "again") is False  # the first solve counts
    assert [s.link for s in again.solves(code)][0] == LINK + "1"


def test_one_class_never_reads_or_writes_another(board: Board) -> None:
    a, b = board.open_class("Class A"), board.open_class("Class B")
    assert a != b
    ada = board.join(a, "Ada")
    board.join(b, "Ada")  # the same name in another class is another student
    board.record(a, ada, "sharpen", "Sharpen one row", LINK)
    assert board.solves(b) == [] and board.roster(b) == ["Ada"]
    with pytest.raises(BoardError, match="has not joined the class"):
        board.record(b, ada, "sharpen", "Sharpen one row", LINK)  # a token of class A in class B
    with pytest.raises(BoardError, match="no class with the code"):
        board.title("ZZZZZZ")


def test_codes_are_read_as_people_type_them(board: Board) -> None:
    code = board.open_class("Lab")
    typed = f" {code[:3].lower()}-{code[3:]} "
    assert normal_code(typed) == code
    assert board.title(typed) == "Lab"
    for bad in ("", "ABC", "ABCDEFG", "ABCDE0", "ABCDE1", "ÄBCDEF", 123, None, "A" * 10_000):
        with pytest.raises(BoardError, match="class code") as e:
            normal_code(bad)
        assert e.value.field == "class code"


def test_names_are_checked_and_kept_as_text(board: Board) -> None:
    code = board.open_class("Lab")
    board.join(code, "Ada")
    with pytest.raises(BoardError, match="already uses the name 'Ada'"):
        board.join(code, " Ada ")
    for bad, why in [
        ("", "empty"),
        ("   ", "empty"),
        ("x" * 41, "41 characters"),
        ("Eve\u200b", "invisible"),
        ("a\x00b", "invisible"),
        ("x" * 100_000, "at most 40"),
    ]:
        with pytest.raises(BoardError, match=why):
            board.join(code, bad)
    odd = ["**bold** [x](http://e.org)", "<b>hi</b> <script>", "=1+2", "Zoë 李"]
    tokens = [board.join(code, name) for name in odd]
    assert board.roster(code) == ["Ada", *odd]  # stored exactly: showing them as text is the page's job
    assert len(set(tokens)) == len(tokens) and all(len(t) >= 30 for t in tokens)


def test_the_csv_export_opens_as_text_in_a_spreadsheet(board: Board) -> None:
    code = board.open_class("Lab")
    for name in ('=HYPERLINK("http://evil")', "+1", "-2", "@SUM(A1)", 'Ada, "the" first'):
        board.record(code, board.join(code, name), "sharpen", "Sharpen one row", LINK)
    rows = list(csv.reader(io.StringIO(solves_csv(board.solves(code)))))
    assert rows[0] == ["student", "challenge", "challenge title", "solved at (UTC)", "hand-in link"]
    names = [r[0] for r in rows[1:]]
    assert names == ['\'=HYPERLINK("http://evil")', "'+1", "'-2", "'@SUM(A1)", 'Ada, "the" first']
    assert all(len(r) == 5 and r[4] == LINK for r in rows[1:])
    assert all(time.strptime(r[3], "%Y-%m-%d %H:%M:%S") for r in rows[1:])


def test_many_sessions_of_one_server_write_at_once(board: Board) -> None:
    """Streamlit runs each session on its own thread: 40 students join and hand in at once, nothing is lost."""
    code = board.open_class("Lab")

    def one(i: int) -> None:
        token = board.join(code, f"student {i}")
        for ch in ("a", "b", "c"):
            board.record(code, token, ch, ch.upper(), LINK)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(40)))
    assert len(board.roster(code)) == 40 and len(board.solves(code)) == 120


# ------------------------------------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="module")
def postgres():
    """A throwaway PostgreSQL server on a free local port (see tests/helpers/postgres.py): its SQLAlchemy URL."""
    with postgres_server() as url:
        yield url


def _replica(url: str, code: str, first: int, count: int, out: multiprocessing.Queue) -> None:
    """One replica's students: join and hand in three challenges each (run in its own process)."""
    board = Board(url)
    for i in range(first, first + count):
        token = board.join(code, f"student {i}")
        for ch in ("a", "b", "c"):
            board.record(code, token, ch, ch.upper(), f"{LINK}&s={i}&c={ch}")
    out.put(len(board.solves(code)))


def test_two_replicas_share_one_postgresql_board(postgres: str) -> None:
    """Two processes (two replicas behind nginx) write one class's board at once; either one reads all of it, a
    second class sees none of it, and a third process started later (a restarted replica) reads the same board."""
    teacher = Board(postgres)
    code, other = teacher.open_class("Lab on two replicas"), teacher.open_class("Another class")
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_replica, args=(postgres, code, first, 15, out)) for first in (0, 15)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert sorted(out.get(timeout=5) for _ in procs)[-1] == 90
    teacher.engine.dispose()
    later = Board(postgres)
    assert len(later.roster(code)) == 30 and len(later.solves(code)) == 90
    assert {s.link for s in later.solves(code)} == {f"{LINK}&s={i}&c={ch}" for i in range(30) for ch in "abc"}
    assert later.solves(other) == [] and later.roster(other) == []
    with pytest.raises(BoardError, match="already uses the name"):
        later.join(code, "student 7")  # the name is taken, whichever replica is asked
