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

from attention.io.board import CODE_ALPHABET, LINK_HOURS, Board, BoardError, board_csv, normal_code
from tests.helpers.postgres import postgres_server

LINK = "http://localhost:8501/softmax?p=the_cat_sat&challenge=abc"


@pytest.fixture()
def board(tmp_path: Path) -> Board:
    return Board(f"sqlite:///{tmp_path / 'board.sqlite3'}")


def _set(board: Board, code: str, *ids: str) -> None:
    """The teacher sets the challenges ``ids`` for class ``code`` (their titles: the id in capitals)."""
    for cid in ids:
        board.assign(code, cid, cid.upper(), f"{LINK}&set={cid}")


def test_a_class_from_opening_to_the_board_survives_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'board.sqlite3'}"
    first = Board(url)
    code = first.open_class("Tuesday lab")
    _set(first, code, "sharpen", "uniform")
    assert len(code) == 6 and set(code) <= set(CODE_ALPHABET)
    ada, bob = first.join(code, "Ada"), first.join(code, "  Bob   Smith ")
    assert first.record(code, ada, "sharpen", LINK + "1")
    assert first.record(code, bob, "sharpen", LINK + "2")
    assert first.record(code, ada, "uniform", LINK + "3")
    first.engine.dispose()  # the server stops

    again = Board(url)  # ... and starts again on the same file
    assert again.title(code) == "Tuesday lab"
    assert again.roster(code) == ["Ada", "Bob Smith"]
    got = [(s.name, s.challenge_id, s.link) for s in again.solves(code)]
    assert got == [("Ada", "sharpen", LINK + "1"), ("Bob Smith", "sharpen", LINK + "2"), ("Ada", "uniform", LINK + "3")]
    assert all(s.solved_at.tzinfo is not None for s in again.solves(code))
    assert again.record(code, ada, "sharpen", LINK + "again") is False  # the first solve counts
    assert [s.link for s in again.solves(code)][0] == LINK + "1"


def test_one_class_never_reads_or_writes_another(board: Board) -> None:
    a, b = board.open_class("Class A"), board.open_class("Class B")
    assert a != b
    _set(board, a, "sharpen")
    _set(board, b, "sharpen")
    ada = board.join(a, "Ada")
    board.join(b, "Ada")  # the same name in another class is another student
    board.record(a, ada, "sharpen", LINK)
    assert board.solves(b) == [] and board.roster(b) == ["Ada"]
    with pytest.raises(BoardError, match="has not joined the class"):
        board.record(b, ada, "sharpen", LINK)  # a token of class A in class B
    with pytest.raises(BoardError, match="no class with the code"):
        board.title("ZZZZZZ")


def test_the_store_keeps_no_token_that_works(board: Board) -> None:
    """A student's token and a rejoin ticket are kept as their sha256: whoever reads the database holds no seat."""
    import sqlalchemy as sa

    code = board.open_class("Tokens")
    token = board.join(code, "Ada")
    with board.engine.connect() as db:
        kept = [row.token for row in db.execute(sa.text("select token from board_students"))]
    assert kept and token not in kept and all(len(k) == 64 for k in kept)
    for stolen in kept:
        with pytest.raises(BoardError, match="has not joined"):
            board.student(code, stolen)
    assert board.student(code, token)[1] == "Ada"


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
    _set(board, code, "sharpen")
    for name in ('=HYPERLINK("http://evil")', "+1", "-2", "@SUM(A1)", 'Ada, "the" first'):
        board.record(code, board.join(code, name), "sharpen", LINK)
    rows = list(csv.reader(io.StringIO(board_csv(*board.standings(code), code=code))))
    utc = time.localtime().tm_gmtoff == 0  # a UTC server: no second, identical time column
    local = [] if utc else ["SHARPEN: solved at (server time, "]
    heads = ["student", "SHARPEN: value", "SHARPEN: status", "SHARPEN: solved at (UTC)", *local]
    heads.append("SHARPEN: hand-in link")
    assert [h[: len(want)] for h, want in zip(rows[0], heads, strict=False)] == heads
    assert rows[0][-1] == "challenges solved (of 1)" and len(rows[0]) == len(heads) + 1
    names = [r[0] for r in rows[1:]]
    assert names == ['\'=HYPERLINK("http://evil")', "'+1", "'-2", "'@SUM(A1)", 'Ada, "the" first']
    assert all(len(r) == len(heads) + 1 and r[2] == "solved" and r[-1] == "1" for r in rows[1:])
    assert all(r[-2].startswith(f"class_board?class={code}&solve=") and len(r[-2]) < 60 for r in rows[1:])
    assert all(time.strptime(t, "%Y-%m-%d %H:%M:%S") for r in rows[1:] for t in r[3 : 3 + 1 + len(local)])
    import pandas as pd  # a grade book's reader: the times read as times with parse_dates, the values as numbers

    frame = pd.read_csv(io.StringIO(board_csv(*board.standings(code), code=code)), parse_dates=[heads[3]])
    assert str(frame[heads[3]].dtype).startswith("datetime64")


def test_only_the_challenges_the_teacher_set_are_handed_in(board: Board) -> None:
    """A class takes the challenges set for it, by content key, and nothing else; a closed class takes nothing."""
    code = board.open_class("Lab")
    _set(board, code, "c-real")
    ada = board.join(code, "Ada")
    with pytest.raises(BoardError, match="not set by the teacher of class"):
        board.record(code, ada, "c-easier-copy", LINK)
    with pytest.raises(BoardError, match="not set by the teacher"):
        board.report(code, ada, "c-easier-copy", "0.4")
    assert board.solves(code) == []
    assert board.record(code, ada, "c-real", LINK)
    assert [s.challenge_title for s in board.solves(code)] == ["C-REAL"]  # the title the teacher set
    assert board.assign(code, "c-real", "again", LINK) is False  # set once


def test_every_student_is_one_row_with_each_goals_value_and_when_it_was_solved(board: Board) -> None:
    code = board.open_class("Lab")
    _set(board, code, "one", "two")
    ada, bob = board.join(code, "Ada"), board.join(code, "Bob")
    board.join(code, "Cy")  # joined, started nothing
    board.report(code, ada, "one", "0.31")
    board.report(code, ada, "one", "0.42")  # the latest value counts
    board.report(code, bob, "two", "✓ 0.7")
    board.record(code, bob, "two", "challenges?p=x&challenge=abc")
    tasks, rows = board.standings(code)
    assert [a.title for a in tasks] == ["ONE", "TWO"] and [r.name for r in rows] == ["Ada", "Bob", "Cy"]
    assert [[c.status for c in r.cells] for r in rows] == [
        ["not yet solved", "not started"],
        ["not started", "solved"],
        ["not started", "not started"],
    ]
    assert rows[0].cells[0].value == "0.42" and rows[1].cells[1].solved_at is not None
    lines = list(csv.reader(io.StringIO(board_csv(tasks, rows, "https://lab.example.org", code))))
    assert len(lines) == 4 and [r[0] for r in lines[1:]] == ["Ada", "Bob", "Cy"]
    col = {h: i for i, h in enumerate(lines[0])}
    sid = rows[1].cells[1].solve_id
    assert lines[2][col["TWO: hand-in link"]] == f"https://lab.example.org/class_board?class={code}&solve={sid}"
    assert board.solve_by_id(code, sid).link == "challenges?p=x&challenge=abc"
    assert [lines[1][col["ONE: value"]], lines[1][col["ONE: status"]]] == ["0.42", "not yet solved"]
    assert [lines[2][col["TWO: value"]], lines[2][col["TWO: status"]]] == ["0.7", "solved"]  # numbers
    assert [r[-1] for r in lines[1:]] == ["0", "1", "0"]  # the total
    assert "None" not in "".join(",".join(r) for r in lines)
    board.report(code, bob, "two", "0.0008823")  # a later tab of the solved challenge: the solving value stays
    assert board.standings(code)[1][1].cells[1].value == "✓ 0.7"


def test_the_teacher_renames_removes_and_closes(board: Board) -> None:
    code = board.open_class("Lab")
    _set(board, code, "one")
    ada, bob = board.join(code, "Ada"), board.join(code, "Bob")
    board.record(code, bob, "one", LINK)
    board.rename(code, "Ada", "Ada L.")
    assert board.student(code, ada)[1] == "Ada L."  # her token is still hers
    with pytest.raises(BoardError, match="already uses the name"):
        board.rename(code, "Ada L.", "Bob")
    board.remove(code, "Bob")
    assert board.roster(code) == ["Ada L."] and board.solves(code) == []
    with pytest.raises(BoardError, match="has not joined"):
        board.record(code, bob, "one", LINK)
    with pytest.raises(BoardError, match="no student"):
        board.remove(code, "Nobody")
    board.close_class(code)
    assert board.is_closed(code) and board.title(code) == "Lab"
    with pytest.raises(BoardError, match="is closed"):
        board.join(code, "Dee")
    with pytest.raises(BoardError, match="is closed"):
        board.record(code, ada, "one", LINK)


def test_a_closed_class_records_no_progress(board: Board) -> None:
    """The page promises that after close nobody hands in: progress reports are refused too, and the board keeps the
    last value from before the close."""
    code = board.open_class("Lab")
    _set(board, code, "one")
    ada = board.join(code, "Ada")
    board.report(code, ada, "one", "0.3")
    board.close_class(code)
    with pytest.raises(BoardError, match="is closed"):
        board.report(code, ada, "one", "0.9")
    assert [c.value for c in board.standings(code)[1][0].cells] == ["0.3"]


def test_a_kept_teacher_key_is_signed_by_a_random_secret_and_expires(tmp_path: Path) -> None:
    """The teacher cookie's value is signed with a random secret kept in the board's database (the same for a second
    store on it, not the typed key: a seen value gives nothing to guess the key from offline), holds its issue time
    and neither the key nor a class, and is refused when forged, made for another key, or older than LINK_HOURS."""
    url = f"sqlite:///{tmp_path / 'board.sqlite3'}"
    board, replica = Board(url), Board(url)
    assert len(board.secret()) == 64 and replica.secret() == board.secret()
    assert Board(f"sqlite:///{tmp_path / 'b2.sqlite3'}").secret() != board.secret()  # random, not derived
    now, key = 1_800_000_000, "the teacher key"
    kept = board.teacher_pass(key, issued=now)
    issued, sig = kept.split(".")
    assert (issued, len(sig)) == (str(now), 32) and key not in kept
    assert replica.check_teacher_pass(kept, key, now=now + LINK_HOURS * 3600) == now
    with pytest.raises(BoardError, match=f"for {LINK_HOURS} hours"):
        replica.check_teacher_pass(kept, key, now=now + LINK_HOURS * 3600 + 1)
    with pytest.raises(BoardError, match="does not check out"):
        replica.check_teacher_pass(kept, "a new key", now=now)  # a new key ends every kept one
    for forged in (f"{now + 10}.{sig}", f"{issued}.{'0' * 32}", sig, "", "x" * 10_000, f"{'9' * 40}.{sig}"):
        with pytest.raises(BoardError):
            board.check_teacher_pass(forged, key, now=now)


def test_many_sessions_of_one_server_write_at_once(board: Board) -> None:
    """Streamlit runs each session on its own thread: 40 students join and hand in at once, nothing is lost."""
    code = board.open_class("Lab")
    _set(board, code, "a", "b", "c")

    def one(i: int) -> None:
        token = board.join(code, f"student {i}")
        for ch in ("a", "b", "c"):
            board.record(code, token, ch, LINK)

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
            board.record(code, token, ch, f"{LINK}&s={i}&c={ch}")
    out.put(len(board.solves(code)))


def test_two_replicas_share_one_postgresql_board(postgres: str) -> None:
    """Two processes (two replicas behind nginx) write one class's board at once; either one reads all of it, a
    second class sees none of it, and a third process started later (a restarted replica) reads the same board."""
    teacher = Board(postgres)
    code, other = teacher.open_class("Lab on two replicas"), teacher.open_class("Another class")
    _set(teacher, code, "a", "b", "c")
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


def test_a_postgresql_board_keeps_what_the_teacher_set_and_every_students_row(postgres: str) -> None:
    """The tables for set challenges, progress and closed classes work on PostgreSQL, read by another replica."""
    teacher = Board(postgres)
    code = teacher.open_class("Graded lab")
    _set(teacher, code, "one")
    other = Board(postgres)  # a second replica's store
    ada, bob = other.join(code, "Ada"), other.join(code, "Bob")
    other.report(code, ada, "one", "0.5")
    with pytest.raises(BoardError, match="not set by the teacher"):
        other.record(code, bob, "copy", LINK)
    assert other.record(code, bob, "one", LINK)
    teacher.rename(code, "Bob", "Bobby")
    tasks, rows = teacher.standings(code)
    assert [(r.name, [c.status for c in r.cells]) for r in rows] == [
        ("Ada", ["not yet solved"]),
        ("Bobby", ["solved"]),
    ]
    teacher.close_class(code)
    with pytest.raises(BoardError, match="is closed"):
        other.join(code, "Cy")
    with pytest.raises(BoardError, match="is closed"):
        other.report(code, ada, "one", "0.9")
    kept = teacher.teacher_pass("key")  # the signing secret is in the database: the other replica checks it
    assert other.check_teacher_pass(kept, "key") > 0 and other.secret() == teacher.secret()
    assert other.closed_at(code) is not None


def test_on_postgresql_only_her_own_work_hands_in_and_another_replica_keeps_it_hers(postgres: str) -> None:
    """Issue 41 §1 on the deployed store: Alice solves; Chen opens her link, in the class, and nothing is handed in
    for him; Dee's own edit survives a replica taking over (the next run opens the store afresh and checks her
    own-work mark kept in the database), and her solve is handed in; Alice and Dee both typed the hint's number,
    which the copy check does not count."""
    from attention.labs import copies
    from attention.ui.core import classboard
    from tests.helpers.apptest import session, texts
    from tests.helpers.board import (
        edit_first_cell,
        handed_in,
        member,
        opened,
        refused,
        reloaded,
        set_builtin,
        share,
        started,
        student_solves,
    )

    code = Board(postgres).open_class("Lab on PostgreSQL")
    set_builtin(postgres, code)
    alice = student_solves(postgres, code, "Alice")
    chen = opened(postgres, "challenges", share(alice), member(postgres, code, "Chen"))
    refused(chen, postgres, code)
    dee = edit_first_cell(started(opened(postgres, "challenges", {}, member(postgres, code, "Dee"))), "0.5")
    classboard._board.clear()  # another replica: a store opened afresh
    again = reloaded(postgres, dee)
    assert session(again).arrived == ""
    again = edit_first_cell(again, "-10")
    assert handed_in(again), texts(again.sidebar.warning)
    assert [s.name for s in Board(postgres).solves(code)] == ["Alice", "Dee"]
    rows = Board(postgres).standings(code)[1]
    kept = [copies.decode(r.cells[0].edits) for r in rows if r.cells[0].solved_at is not None]
    assert [[(e.where, e.text, e.hinted) for e in k] for k in kept] == [[("W_v d1·v1", "-10.0", True)]] * 2
    assert copies.near_copies([(r.name, r.cells[0].edits) for r in rows]) == []


def test_a_training_run_lost_to_a_failover_is_said() -> None:
    """A Learn the weights run lives in its replica's memory: the replica that takes over rebuilds the session from
    the address alone, and the page says the run was lost and what to do (a real kill -9 is not run here)."""
    from tests.helpers.apptest import journey, session, texts

    at = journey("learn", {"preset": "the_cat_sat"})
    at = at.button(key="learn.train").click().run()
    assert session(at).learned is not None
    address = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    assert address.get("learned") == "1"
    again = journey("learn", address)  # a new session from the address: what another replica does
    said = texts(again.warning) + texts(again.info) + texts(again.error)
    assert any("it was lost" in t and "Train again" in t for t in said), said
    fresh = journey("learn", {k: v for k, v in address.items() if k != "learned"})
    assert not any("it was lost" in t for t in texts(fresh.warning) + texts(fresh.info))


def test_a_shared_address_does_not_hand_over_identity(postgres: str) -> None:
    """Issue 48 §1: student A sends student C her whole address bar (an older version's, with ``member=`` and
    ``own=`` in it too). C opens it in her own browser: she stays C, the page says the membership in it was ignored,
    her solve made there is not handed in (the numbers arrived whole); after Restart her own solve goes to her own
    row, and A's row (its solve, its time, its link, its value) is unchanged."""
    from tests.helpers.apptest import address, session, texts
    from tests.helpers.board import (
        cookie_of,
        edit_first_cell,
        handed_in,
        member,
        opened,
        refused,
        set_builtin,
        student_solves,
    )

    code = Board(postgres).open_class("Lab on PostgreSQL")
    set_builtin(postgres, code)
    alice = student_solves(postgres, code, "Alice")
    assert handed_in(alice)
    before = Board(postgres).standings(code)[1]
    bar = address(alice)
    assert "member" not in bar and "own" not in bar  # the address bar never carries who she is
    a = session(alice).member
    bar_of_old = {**bar, "member": f"{a.code}.{a.token}", "own": "0" * 32}  # what an older version's bar held
    chen_cookie = member(postgres, code, "Chen")
    for shared in (bar, bar_of_old):
        chen = opened(postgres, "challenges", shared, chen_cookie)
        assert session(chen).member.name == "Chen" and cookie_of(chen) == chen_cookie
        refused(chen, postgres, code)
    said = texts(chen.warning)
    assert any("An address never says who you are" in t for t in said), said
    assert "member" not in address(chen) and "own" not in address(chen)  # dropped from her address bar
    chen = edit_first_cell(chen.button(key="ch.restart").click().run(), "-10")  # her own work, from the start
    assert handed_in(chen)
    tasks, rows = Board(postgres).standings(code)
    assert [r.name for r in rows] == ["Alice", "Chen"]
    assert rows[0] == before[0]  # Alice's row: as it was
    assert rows[1].cells[0].solved_at is not None
    assert [s.name for s in Board(postgres).solves(code)] == ["Alice", "Chen"]
    nobody = opened(postgres, "challenges", bar_of_old)  # a browser in no class: the address gives no seat
    assert session(nobody).member is None


def test_a_rejoin_link_gives_a_lost_seat_back_once(postgres: str) -> None:
    """A student who lost her browser's membership gets back in by her teacher's rejoin link: it works once, gives a
    new token (the old one stops working), and leaves the address bar."""
    from tests.helpers.apptest import address, session, texts
    from tests.helpers.board import opened

    board = Board(postgres)
    code = board.open_class("Rejoin lab")
    old = board.join(code, "Bea")
    ticket = board.rejoin_ticket(code, "Bea")
    back = opened(postgres, "challenges", {"rejoin": f"{code}.{ticket}"})
    assert session(back).member.name == "Bea" and session(back).member.token != old
    assert any("You are back in class" in t for t in texts(back.success)), texts(back.success)
    assert "rejoin" not in address(back)
    with pytest.raises(BoardError, match="has not joined"):
        board.student(code, old)  # the lost (or copied) token gives nothing now
    again = opened(postgres, "challenges", {"rejoin": f"{code}.{ticket}"})  # used once
    assert session(again).member is None
    assert any("used already" in t for t in texts(again.warning)), texts(again.warning)
    with pytest.raises(BoardError, match="no student"):
        board.rejoin_ticket(code, "Nobody")


def test_the_board_ticks_only_handed_in_work(postgres: str) -> None:
    """Issue 48 §2: Alice hands in; Chen reaches the goal on Alice's link (refused: the numbers arrived whole). On the
    teacher's board Chen's cell reads "refused: …" with its reason and no ✓, the ✓ is Alice's alone, and the CSV's
    status says the same words; the values are numbers in both."""
    from tests.helpers.apptest import texts
    from tests.helpers.board import member, opened, refused, set_builtin, share, student_solves, teacher

    code = Board(postgres).open_class("Lab on PostgreSQL")
    set_builtin(postgres, code)
    alice = student_solves(postgres, code, "Alice")
    chen = opened(postgres, "challenges", share(alice), member(postgres, code, "Chen"))
    refused(chen, postgres, code)
    why = "refused: the numbers arrived whole, by a link"
    page = teacher(postgres)
    page.text_input(key="board.show").set_value(code)
    page = page.button[[b.label for b in page.button].index("Show it")].click().run()
    board = page.dataframe[0].value
    cells = dict(zip(board["student"], board["1. A negative output"], strict=True))
    assert cells["Alice"].startswith("✓ solved ") and cells["Chen"] == why, cells
    assert not any(c.startswith("✓") for c in [cells["Chen"]])
    said = [m.value.replace("\\", "") for m in page.markdown]  # Markdown as written, its escapes taken out
    assert any("Chen" in m and why in m for m in said), said  # its reason in full, below the table
    tasks, rows = Board(postgres).standings(code)
    lines = list(csv.reader(io.StringIO(board_csv(tasks, rows, code=code))))
    by_name = {r[0]: r for r in lines[1:]}
    assert by_name["Alice"][2] == "solved" and by_name["Chen"][2] == why  # the board's words
    assert float(by_name["Chen"][1]) < 0 and float(by_name["Alice"][1]) < 0  # the goal's value, as a number
    assert by_name["Chen"][3] == "" and by_name["Chen"][-1] == "0" and by_name["Alice"][-1] == "1"
    assert not texts(page.exception)


def test_a_look_alike_name_is_refused(postgres: str) -> None:
    """Issue 48 §4: names are compared after NFKC, case folding and look-alike punctuation as its plain form, on the
    deployed store: "O’Neil" (a curly apostrophe) is refused beside "O'Neil", and so are the other look-alikes; a
    rename to a look-alike is refused too, a student's own name in another case is not; the join box says why."""
    from attention.io.board import name_key
    from tests.helpers.apptest import journey, texts
    from tests.helpers.board import with_board

    board = Board(postgres)
    code = board.open_class("Names")
    board.join(code, "O'Neil")
    for look_alike in ("O’Neil", "O‘Neil", "OʼNeil", "o'neil", "ＯʼＮｅｉｌ", " O'NEIL ", "O′Neil"):
        with pytest.raises(BoardError, match='already uses the name "O\'Neil", which looks the same as') as e:
            board.join(code, look_alike)
        assert e.value.field == "display name"
    board.join(code, "Jean–Luc")  # an en dash
    for look_alike in ("Jean-Luc", "Jean—Luc", "jean‐luc", "Jean−Luc"):
        with pytest.raises(BoardError, match="already uses the name 'Jean–Luc'"):
            board.join(code, look_alike)
    board.join(code, "“Bo”")
    with pytest.raises(BoardError, match="already uses"):
        board.join(code, '"bo"')
    board.join(code, "O'Neal")  # another name: accepted
    with pytest.raises(BoardError, match='already uses the name "O\'Neil"'):
        board.rename(code, "O'Neal", "O’NEIL")
    board.rename(code, "O'Neil", "O’NEIL")  # her own name, written another way: hers to choose
    assert board.roster(code) == ["O’NEIL", "Jean–Luc", "“Bo”", "O'Neal"]
    assert name_key("ﬁnn") == name_key("FINN") and name_key("Zoë") != name_key("Zoe")  # NFKC, not accents away
    at = with_board(journey("challenges"), postgres).run()
    at.text_input(key="board.join.code").set_value(code)
    at.text_input(key="board.join.name").set_value("o’neal")
    at = at.button[[b.label for b in at.button].index("Join")].click().run()
    said = [t.replace("\\", "") for t in texts(at.error)]
    assert any("O'Neal" in t and "looks the same" in t and "Nothing changed" in t for t in said), said
    assert board.roster(code) == ["O’NEIL", "Jean–Luc", "“Bo”", "O'Neal"]


def test_closing_asks_and_can_be_undone(postgres: str) -> None:
    """Issue 48 §5: Close asks first (Cancel leaves the class open); a closed class's page offers Reopen and nothing
    else (no Set, Rename, Remove or Close) and keeps its board; a solve made while closed is not recorded and the
    student is told so, and the board says "refused"; Reopen opens it again, and the student's next solve is handed
    in."""
    from attention.ui.core import keys
    from tests.helpers.apptest import texts
    from tests.helpers.board import edit_first_cell, handed_in, member, opened, set_builtin, started, teacher

    code = Board(postgres).open_class("Closing lab")
    set_builtin(postgres, code)
    ada = started(opened(postgres, "challenges", {}, member(postgres, code, "Ada")))
    page = teacher(postgres)
    page.text_input(key="board.show").set_value(code)
    page = page.button[[b.label for b in page.button].index("Show it")].click().run()
    managing = {keys.BOARD_CLOSE, keys.BOARD_SET, keys.BOARD_WHO}
    page = page.button(key=keys.BOARD_CLOSE).click().run()
    assert not Board(postgres).is_closed(code)  # asked, not done
    assert any(f"Close class {code}?" in t for t in texts(page.warning)), texts(page.warning)
    page = page.button(key=keys.BOARD_CLOSE_NO).click().run()
    assert not Board(postgres).is_closed(code) and any("stays open" in t for t in texts(page.info))
    page = page.button(key=keys.BOARD_CLOSE).click().run()
    page = page.button(key=keys.BOARD_CLOSE_YES).click().run()
    assert Board(postgres).is_closed(code)
    drawn = {b.key for b in page.button} | {b.key for b in page.selectbox} | {f.key for f in page.get("form")}
    offered = [b.label for b in page.button]
    assert "Reopen the class" in offered and not managing & drawn, drawn
    assert not {"Set it", "Rename", "Remove from the class…", "Close the class…"} & set(offered), offered
    assert any(f"Class {code} · Closing lab · closed" in h.value for h in page.subheader)
    assert list(page.dataframe[0].value["student"]) == ["Ada"]  # the board stays readable

    ada = edit_first_cell(ada, "-10")  # solved while closed
    said = texts(ada.sidebar.warning)
    assert any(f"class {code} was closed, so this solve was not recorded" in t for t in said), said
    assert not handed_in(ada) and Board(postgres).solves(code) == []
    page = page.run()
    assert page.dataframe[0].value["1. A negative output"][0] == "refused: solved after the class was closed"

    page = page.button(key=keys.BOARD_REOPEN).click().run()
    assert not Board(postgres).is_closed(code)
    assert any("is open again" in t for t in texts(page.success)), texts(page.success)
    assert {"Set it", "Close the class…"} <= {b.label for b in page.button}
    ada = edit_first_cell(edit_first_cell(ada, "0.5"), "-10")  # the goal reached again, now open
    assert handed_in(ada), texts(ada.sidebar.warning)
    assert [s.name for s in Board(postgres).solves(code)] == ["Ada"]


def _solves_with(url: str, code: str, name: str, cells: list[tuple[int, int, str]]) -> None:
    """``name`` joins class ``code`` in a browser of her own, starts the set challenge and types ``cells`` (row,
    column, text) into W_v's grid one at a time, in order (the last one solves it): the hand-in is handed in."""
    from tests.helpers.apptest import edit_cells, session, texts
    from tests.helpers.board import handed_in, member, opened, started

    at = started(opened(url, "challenges", {}, member(url, code, name)))
    cols = session(at).axis_labels("W_v", session(at).matrices["W_v"].shape)[1]
    for row, col, text in cells:
        at = edit_cells(at, "W_v", {row: {cols[col]: text}})
    assert handed_in(at), texts(at.sidebar.warning)


def test_the_copy_check_spares_the_hint_and_finds_the_near_copy(postgres: str) -> None:
    """Issue 48 §3, on the deployed store and the teacher's page. The hint says: W_v's row d1, column v1 to -10.
    Four students follow it (the very same numbers, in the cell the hint names): none is flagged. Ana finds her
    own way (0.37 in row d4, column v3, then -10 in row d2, column v1); Ben types Ana's numbers; Dee types them with
    -10.001 for -10 (a near copy: every cell beyond the hint agrees, one to the digits, one within 0.1%); Eve
    changes the same two cells to numbers of her own. Ana and Ben, Ana and Dee, Ben and Dee are flagged, each with
    the cells and numbers that agreed; Eve and the hint's followers are not."""
    from attention.labs import copies
    from tests.helpers.apptest import texts
    from tests.helpers.board import set_builtin, teacher

    code = Board(postgres).open_class("Copy check")
    set_builtin(postgres, code)
    hint = [(0, 0, "-10")]  # the hint's recipe, as written
    own = {"Ana": "-10", "Ben": "-10", "Dee": "-10.001", "Eve": "-7.5"}
    for name in ("Hal", "Ida", "Jo", "Kim"):
        _solves_with(postgres, code, name, hint)
    for name, value in own.items():
        _solves_with(postgres, code, name, [(3, 2, "0.9" if name == "Eve" else "0.37"), (1, 0, value)])
    tasks, rows = Board(postgres).standings(code)
    assert all(r.cells[0].solved_at is not None for r in rows) and len(rows) == 8
    kept = {r.name: copies.decode(r.cells[0].edits) for r in rows}
    assert [(e.where, e.text, e.hinted) for e in kept["Hal"]] == [("W_v d1·v1", "-10.0", True)]
    assert {(e.where, e.text, e.hinted) for e in kept["Dee"]} == {
        ("W_v d2·v1", "-10.001", False),
        ("W_v d4·v3", "0.37", False),
    }
    flagged = copies.near_copies([(r.name, r.cells[0].edits) for r in rows])
    assert [pair for pair, _ in flagged] == [("Ana", "Ben"), ("Ana", "Dee"), ("Ben", "Dee")]
    why = dict(flagged)
    assert "to the digits typed" in why[("Ana", "Ben")] and "W_v d2·v1 = -10.0" in why[("Ana", "Ben")]
    assert "within 0.1%" in why[("Ana", "Dee")] and "-10.0 and -10.001" in why[("Ana", "Dee")]
    assert "W_v d4·v3 = 0.37" in why[("Ana", "Dee")]

    page = teacher(postgres)
    page.text_input(key="board.show").set_value(code)
    page = page.button[[b.label for b in page.button].index("Show it")].click().run()
    said = [t.replace("\\", "") for t in texts(page.warning) if "Worth a word" in t]
    assert len(said) == 3, said
    assert any("Ana and Dee" in t and "-10.001" in t and "beyond the hint" in t for t in said), said
    assert not any(n in t for t in said for n in ("Hal", "Ida", "Jo", "Kim", "Eve")), said


def test_the_copy_check_reads_the_cells_a_hint_names() -> None:
    """The hint's cells, read from its words by the grids' labels: one cell, whole rows, whole columns, every
    number of a matrix; a matrix it does not name has none (unless it is the only one that may be edited)."""
    import numpy as np

    from attention.labs import copies

    rows, cols = ["d1", "d2", "d3", "d4"], ["k1", "k2", "k3"]
    one = "Set the number of W_v in row d1, column v1 to -10."
    assert copies.hinted_cells(one, "W_v", rows, ["v1", "v2", "v3"], only=True) == {(0, 0)}
    both = "Set every number in rows d2 and d4 of W_k to -1."
    assert copies.hinted_cells(both, "W_k", rows, cols, only=False) == {(i, j) for i in (1, 3) for j in range(3)}
    assert copies.hinted_cells(both, "W_q", rows, ["q1", "q2"], only=False) == set()
    every = "Multiply every number of W_q by 8."
    assert len(copies.hinted_cells(every, "W_q", rows, ["q1", "q2"], only=False)) == 8
    assert copies.hinted_cells("Columns q3 and q4 of W_q", "W_q", rows, ["q1", "q2", "q3", "q4"], False) == {
        (i, j) for i in range(4) for j in (2, 3)
    }
    assert copies.hinted_cells("row d10", "W_q", [f"d{i}" for i in range(1, 11)], ["q1"], True) == {(9, 0)}
    start, now = np.zeros((2, 2)), np.array([[0.0, -10.001], [0.1 + 0.2, 0.0]])
    got = copies.hand_in({"W_v": start}, {"W_v": now}, "every number in row d1", {"W_v": (["d1", "d2"], ["v1", "v2"])})
    assert [(e.where, e.text, e.hinted) for e in got] == [
        ("W_v d1·v2", "-10.001", True),  # row d1 is named, no column: the whole row
        ("W_v d2·v1", "0.30000000000000004", False),  # the float as it reads back
    ]
    for bad in ("", "not json", "[[1]]", "x" * (copies.MAX_TEXT + 1), '{"a": 1}'):
        assert copies.decode(bad) == []
    assert copies.near_copies([("A", "[]"), ("B", "garbage")]) == []
