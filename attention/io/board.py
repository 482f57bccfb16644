"""A class board: classes a teacher opens, students who join with its code, and the challenges each one solved.

One database through SQLAlchemy, named by a URL: an SQLite file for one server (nothing to install, survives a
restart), any database SQLAlchemy speaks for several replicas (PostgreSQL: ``postgresql+psycopg://...``). Every
query names its class, so one class's code never reads another's. A student is known by a secret token given when
she joins (her browser session keeps it), never by her display name. This module only stores: whether a hand-in
solves its challenge is decided by the caller, from the numbers the link carries, before :meth:`Board.record`.

    board = Board("sqlite:///board.sqlite3")
    code = board.open_class("Tuesday lab")             # 'K7QX2M': the teacher writes it on the board
    token = board.join(code, "Ada")                    # the student's secret
    board.assign(code, key, "Sharpen one row", link)   # the teacher sets a challenge (key: its content's hash)
    board.record(code, token, key, "https://.../challenges?challenge=...")   # refused for a challenge not set
    board.standings(code)                              # every student, one row: value, solved or not, when
"""

from __future__ import annotations

import csv
import functools
import hashlib
import hmac
import io
import logging
import re
import secrets
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from ..errors import AttentionError
from ..names import MAX_LINK_CHARS

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and typed by a class
CODE_LENGTH = 6  # 32**6, about 10**9 codes
MAX_CLASS_TITLE_CHARS = 80
MAX_NAME_CHARS = 40
MAX_CHALLENGE_ID_CHARS = 100  # as a challenge file allows
MAX_CHALLENGE_TITLE_CHARS = 200
MAX_VALUE_CHARS = 80  # a goal's current value as the board shows it ("0.412 (needs ≥ 0.5)")
DEFAULT_URL = "sqlite:///board.sqlite3"
_LOG = logging.getLogger(__name__)
T = TypeVar("T")

_meta = sa.MetaData()
classes = sa.Table(
    "board_classes",
    _meta,
    sa.Column("code", sa.String(CODE_LENGTH), primary_key=True),
    sa.Column("title", sa.String(MAX_CLASS_TITLE_CHARS), nullable=False),
    sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
)
students = sa.Table(
    "board_students",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("class_code", sa.String(CODE_LENGTH), sa.ForeignKey("board_classes.code"), nullable=False),
    sa.Column("name", sa.String(MAX_NAME_CHARS), nullable=False),
    sa.Column("token", sa.String(64), nullable=False, unique=True),  # sha256 of the secret, never the secret itself
    sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
    sa.UniqueConstraint("class_code", "name", name="one_name_per_class"),
)
solves = sa.Table(
    "board_solves",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("class_code", sa.String(CODE_LENGTH), sa.ForeignKey("board_classes.code"), nullable=False),
    sa.Column("student_id", sa.Integer, sa.ForeignKey("board_students.id"), nullable=False),
    sa.Column("challenge_id", sa.String(MAX_CHALLENGE_ID_CHARS), nullable=False),
    sa.Column("challenge_title", sa.String(MAX_CHALLENGE_TITLE_CHARS), nullable=False),
    sa.Column("link", sa.Text, nullable=False),
    sa.Column("solved_at", sa.DateTime(timezone=True), nullable=False),
    sa.UniqueConstraint("student_id", "challenge_id", name="first_solve_counts"),
)
assigned = sa.Table(  # the challenges a teacher set for a class, by content key: only these are handed in
    "board_assigned",
    _meta,
    sa.Column("class_code", sa.String(CODE_LENGTH), sa.ForeignKey("board_classes.code"), primary_key=True),
    sa.Column("challenge_id", sa.String(MAX_CHALLENGE_ID_CHARS), primary_key=True),
    sa.Column("challenge_title", sa.String(MAX_CHALLENGE_TITLE_CHARS), nullable=False),
    sa.Column("link", sa.Text, nullable=False),
    sa.Column("assigned_at", sa.DateTime(timezone=True), nullable=False),
)
progress = sa.Table(  # each student's latest value of each assigned goal (one row per student and challenge)
    "board_progress",
    _meta,
    sa.Column("student_id", sa.Integer, sa.ForeignKey("board_students.id"), primary_key=True),
    sa.Column("challenge_id", sa.String(MAX_CHALLENGE_ID_CHARS), primary_key=True),
    sa.Column("value", sa.String(MAX_VALUE_CHARS), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)
closed = sa.Table(  # a class the teacher closed: nobody joins or hands in any more; its board stays readable
    "board_closed",
    _meta,
    sa.Column("class_code", sa.String(CODE_LENGTH), sa.ForeignKey("board_classes.code"), primary_key=True),
    sa.Column("closed_at", sa.DateTime(timezone=True), nullable=False),
)
secret = sa.Table(  # the random secret kept teacher keys and own-work marks are signed with; shared by every replica
    "board_secret",
    _meta,
    sa.Column("name", sa.String(32), primary_key=True),
    sa.Column("value", sa.String(128), nullable=False),
)
numbers = sa.Table(  # an older version's fingerprints of each solve's numbers: no longer written, still taken out with
    # their student (a database made before keeps them); the copy check reads board_handins
    "board_numbers",
    _meta,
    sa.Column("student_id", sa.Integer, sa.ForeignKey("board_students.id"), primary_key=True),
    sa.Column("challenge_id", sa.String(MAX_CHALLENGE_ID_CHARS), primary_key=True),
    sa.Column("digest", sa.String(64), nullable=False),
)
own_marks = sa.Table(  # hashes of the states each student reached by her own edits: a reload finds them here
    "board_own",
    _meta,
    sa.Column("student_id", sa.Integer, sa.ForeignKey("board_students.id"), primary_key=True),
    sa.Column("mark", sa.String(64), primary_key=True),
    sa.Column("kept_at", sa.DateTime(timezone=True), nullable=False),
)
rejoins = sa.Table(  # the teacher's one-use rejoin links: a hash of the ticket, never the ticket itself
    "board_rejoin",
    _meta,
    sa.Column("ticket", sa.String(64), primary_key=True),
    sa.Column("student_id", sa.Integer, sa.ForeignKey("board_students.id"), nullable=False),
    sa.Column("made_at", sa.DateTime(timezone=True), nullable=False),
)
handins = sa.Table(  # what each solve changed (attention.labs.copies: every edited cell, as typed), for the copy check
    "board_handins",
    _meta,
    sa.Column("student_id", sa.Integer, sa.ForeignKey("board_students.id"), primary_key=True),
    sa.Column("challenge_id", sa.String(MAX_CHALLENGE_ID_CHARS), primary_key=True),
    sa.Column("edits", sa.Text, nullable=False),
)
refusals = sa.Table(  # a solve that was not handed in, and why: the board says "refused", never ✓
    "board_refused",
    _meta,
    sa.Column("student_id", sa.Integer, sa.ForeignKey("board_students.id"), primary_key=True),
    sa.Column("challenge_id", sa.String(MAX_CHALLENGE_ID_CHARS), primary_key=True),
    sa.Column("reason", sa.String(200), nullable=False),
    sa.Column("refused_at", sa.DateTime(timezone=True), nullable=False),
)
name_keys = sa.Table(  # each student's name as compared (name_key): two that look the same cannot both join
    "board_names",
    _meta,
    sa.Column("class_code", sa.String(CODE_LENGTH), sa.ForeignKey("board_classes.code"), primary_key=True),
    sa.Column("key", sa.String(4 * MAX_NAME_CHARS), primary_key=True),
    sa.Column("student_id", sa.Integer, sa.ForeignKey("board_students.id"), nullable=False, unique=True),
)
LINK_HOURS = 12  # a browser keeps the teacher key this long: then the teacher types it again
SQLITE_WAIT_S = 30  # an SQLite board waits this long for another session's write (a class joining at once)
OWN_KEPT = 8  # the own-work states kept per student (several tabs, the browser's back button)


class BoardError(AttentionError):
    """A refused class code, name or hand-in, with a message fit to show the person (``field`` names the input)."""


@dataclass(frozen=True)
class Solve:
    """One challenge solved by one student of a class: when (UTC) and the link that hands it in."""

    name: str
    challenge_id: str
    challenge_title: str
    solved_at: datetime
    link: str


@dataclass(frozen=True)
class Assigned:
    """A challenge the teacher set for a class: its content key, its title and the link that opens it."""

    challenge_id: str
    title: str
    link: str


@dataclass(frozen=True)
class Cell:
    """Where one student stands on one assigned challenge: the goal's latest value ("" before she starts it), and
    when she solved it with the link that hands it in (None while not yet solved)."""

    value: str
    solved_at: datetime | None
    link: str | None
    edits: str = ""  # what the solve changed, as attention.labs.copies encodes it ("" when none was kept)
    solve_id: int | None = None  # the solve's id: the short link to it (None while not yet solved)
    refused: str = ""  # why the latest solve that reached the goal was not handed in ("" when none was refused)

    @property
    def number(self) -> float | None:
        """The goal's value as a number ("✓ 0.6 (2 of 3 rows)" -> 0.6), or None before a value that counts."""
        got = _NUMBER.match(self.value)
        return float(got.group(1)) if got else None

    @property
    def status(self) -> str:
        """Where the student stands, in the words the board and its CSV both use: "solved" (handed in), "refused:
        WHY" (the goal was reached but not handed in), "not yet solved" or "not started"."""
        if self.solved_at is not None:
            return "solved"
        if self.refused:
            return f"refused: {self.refused}"
        return "not yet solved" if self.value else "not started"


@dataclass(frozen=True)
class Removed:
    """A student taken out of a class, with every row that went with them (table name, rows), for an undo."""

    code: str
    name: str
    rows: tuple[tuple[str, tuple[dict[str, Any], ...]], ...]


@dataclass(frozen=True)
class Standing:
    """One student of a class, one row of the board: a Cell per assigned challenge, in the assignments' order."""

    name: str
    cells: tuple[Cell, ...]


_NUMBER = re.compile(r"(?:✓ )?([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?:\s|$)")


def normal_code(code: object) -> str:
    """A class code as typed (any case, spaces or a dash between halves) in its stored form, or BoardError."""
    if not isinstance(code, str) or len(code) > 4 * CODE_LENGTH:
        raise BoardError(f"A class code is {CODE_LENGTH} letters and digits.", field="class code")
    cleaned = "".join(ch for ch in code.upper() if ch not in " -")
    if len(cleaned) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in cleaned):
        raise BoardError(
            f"A class code is {CODE_LENGTH} letters and digits (no O, 0, I or 1), like K7QX2M.", field="class code"
        )
    return cleaned


LOOK_ALIKE = str.maketrans(  # punctuation that looks like a plain one, mapped to it (after NFKC)
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u02bc\u02b9\u02bb\u02bd\u2032\u00b4\u0060\uff07", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u02dd\u00ab\u00bb\uff02", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d", "-"),
        **dict.fromkeys("\u00b7\u2027\u2219\u22c5\u30fb", "."),
    }
)


def name_key(name: str) -> str:
    """A display name as two names are compared: Unicode NFKC (full-width letters, ligatures), look-alike
    punctuation as its plain form (’ ‘ ʼ as ', “ ” as ", dashes as -), case folded, spaces collapsed: "O’Neil" and
    "o'neil" are one name."""
    text = unicodedata.normalize("NFKC", name).translate(LOOK_ALIKE).casefold()
    return " ".join(unicodedata.normalize("NFKC", text).split())


def _text(value: object, what: str, limit: int) -> str:
    """``value`` as one line of plain text: stripped, 1 .. ``limit`` characters, no control characters."""
    if not isinstance(value, str) or len(value) > 4 * limit:
        raise BoardError(f"The {what} must be text of at most {limit} characters.", field=what)
    text = " ".join(value.split())
    if not text:
        raise BoardError(f"The {what} is empty.", field=what)
    if len(text) > limit:
        raise BoardError(f"The {what} has {len(text)} characters; at most {limit}.", field=what)
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs") for ch in text):
        raise BoardError(f"The {what} holds an invisible or control character.", field=what)
    return text


def _db_errors(method: Callable[..., T]) -> Callable[..., T]:
    """A database that cannot be reached or written becomes a BoardError fit to show (details stay in the log)."""

    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except SQLAlchemyError as exc:
            _LOG.warning("class board: %s", exc)
            raise BoardError("The class board's database cannot be reached just now; try again in a moment.") from None

    return wrapped


def _visible(text: object) -> object:
    """A title without its invisible characters (an emoji's joiners), bounded first; other values pass as they are."""
    if not isinstance(text, str):
        return text
    return "".join(ch for ch in text[: 4 * MAX_CHALLENGE_TITLE_CHARS] if unicodedata.category(ch) not in ("Cc", "Cf"))


def _now() -> datetime:
    return datetime.now(UTC)


class Board:
    """The class board in the database at ``url`` (its tables are made on first use)."""

    @_db_errors
    def __init__(self, url: str = DEFAULT_URL) -> None:
        try:
            waits = {"connect_args": {"timeout": SQLITE_WAIT_S}} if str(url).startswith("sqlite") else {}
            self.engine = sa.create_engine(url, pool_pre_ping=True, **waits)
        except (ValueError, ImportError, sa.exc.ArgumentError) as exc:  # a URL it cannot read, a driver not installed
            raise BoardError(f"The class board's database URL cannot be used ({type(exc).__name__}).") from None
        _meta.create_all(self.engine)
        self._secret: bytes | None = None

    @_db_errors
    def open_class(self, title: str) -> str:
        """Open a new class titled ``title``; its fresh code."""
        title = _text(title, "class title", MAX_CLASS_TITLE_CHARS)
        for _ in range(20):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            try:
                with self.engine.begin() as db:
                    db.execute(classes.insert().values(code=code, title=title, opened_at=_now()))
                return code
            except IntegrityError:  # that code is taken: draw another
                continue
        raise BoardError("No free class code was found; try again.", field="class code")

    @_db_errors
    def title(self, code: str) -> str:
        """The title of the class ``code``, or BoardError if there is no such class."""
        code = normal_code(code)
        with self.engine.connect() as db:
            title = db.execute(sa.select(classes.c.title).where(classes.c.code == code)).scalar()
        if title is None:
            raise BoardError(f"There is no class with the code {code}.", field="class code")
        return title

    @_db_errors
    def join(self, code: str, name: str) -> str:
        """Join the class ``code`` as ``name`` (unique in that class); the student's secret token."""
        code, name = normal_code(code), _text(name, "display name", MAX_NAME_CHARS)
        self._open(code)
        token = secrets.token_urlsafe(24)
        with self.engine.connect() as db:  # read first: a read that turns into a write can deadlock SQLite
            _name_free(db, code, name)
        try:
            with self.engine.begin() as db:
                row = students.insert().values(class_code=code, name=name, token=_hash(token), joined_at=_now())
                sid = db.execute(row).inserted_primary_key[0]
                db.execute(name_keys.insert().values(class_code=code, key=name_key(name), student_id=sid))
        except IntegrityError:
            raise _taken(name, name) from None
        return token

    @_db_errors
    def student(self, code: str, token: str) -> tuple[int, str]:
        """The (id, name) of the student of class ``code`` holding ``token``, or BoardError."""
        code = normal_code(code)
        if not isinstance(token, str) or len(token) > 64:
            raise BoardError("This browser has not joined the class.", field="class code")
        with self.engine.connect() as db:
            row = db.execute(
                sa.select(students.c.id, students.c.name).where(
                    students.c.class_code == code, students.c.token == _hash(token)
                )
            ).first()
        if row is None:
            raise BoardError(f"This browser has not joined the class {code}.", field="class code")
        return row.id, row.name

    @_db_errors
    def keep_own(self, code: str, token: str, mark: str) -> None:
        """Keep ``mark`` (a hash of a state's shared parameters) as a state the student holding ``token`` reached by
        her own edits, with her OWN_KEPT latest; a reload in her browser finds it (the address never carries it)."""
        student_id, _ = self.student(code, token)
        mark = str(mark)[:64]
        with self.engine.begin() as db:
            db.execute(own_marks.delete().where(own_marks.c.student_id == student_id, own_marks.c.mark == mark))
            db.execute(own_marks.insert().values(student_id=student_id, mark=mark, kept_at=_now()))
            newest = (
                sa.select(own_marks.c.mark)
                .where(own_marks.c.student_id == student_id)
                .order_by(own_marks.c.kept_at.desc())
                .limit(OWN_KEPT)
            )
            kept = list(db.execute(newest).scalars())
            db.execute(own_marks.delete().where(own_marks.c.student_id == student_id, own_marks.c.mark.not_in(kept)))

    @_db_errors
    def is_own(self, code: str, token: str, mark: str) -> bool:
        """Whether the student holding ``token`` reached the state ``mark`` by her own edits (:meth:`keep_own`)."""
        student_id, _ = self.student(code, token)
        query = sa.select(own_marks.c.mark).where(own_marks.c.student_id == student_id, own_marks.c.mark == mark)
        with self.engine.connect() as db:
            return db.execute(query).first() is not None

    @_db_errors
    def rejoin_ticket(self, code: str, name: str) -> str:
        """A one-use ticket that gives the student ``name`` of class ``code`` back to whoever opens it (a student who
        lost her browser's membership); a newer ticket for her ends the older one. Only its hash is stored."""
        code = normal_code(code)
        with self.engine.connect() as db:
            sid = db.execute(
                sa.select(students.c.id).where(students.c.class_code == code, students.c.name == name)
            ).scalar()
        if sid is None:
            raise BoardError(_no_student(name, code), field="display name")
        ticket = secrets.token_urlsafe(24)
        with self.engine.begin() as db:
            db.execute(rejoins.delete().where(rejoins.c.student_id == sid))
            db.execute(rejoins.insert().values(ticket=_hash(ticket), student_id=sid, made_at=_now()))
        return ticket

    @_db_errors
    def redeem(self, code: str, ticket: str) -> tuple[str, str]:
        """Use a rejoin ticket of class ``code`` (once): the student's new token and her name. Her old token stops
        working, so a lost or copied one gives nothing. BoardError when used already, too old or unknown."""
        code = normal_code(code)
        gone = BoardError(
            "This rejoin link was used already, is too old, or was replaced by a newer one: ask your teacher for a "
            "new one.",
            field="rejoin",
        )
        if not isinstance(ticket, str) or not 20 <= len(ticket) <= 64:
            raise gone
        self._open(code)
        token = secrets.token_urlsafe(24)
        with self.engine.connect() as db:
            row = db.execute(sa.select(rejoins).where(rejoins.c.ticket == _hash(ticket))).first()
        if row is None or (_now() - _utc(row.made_at)).total_seconds() > LINK_HOURS * 3600:
            raise gone
        with self.engine.begin() as db:  # the delete decides: of two openings at once, one gets the seat
            if db.execute(rejoins.delete().where(rejoins.c.ticket == _hash(ticket))).rowcount != 1:
                raise gone
            mine = (students.c.id == row.student_id) & (students.c.class_code == code)
            if db.execute(students.update().where(mine).values(token=_hash(token))).rowcount != 1:
                raise gone
            name = db.execute(sa.select(students.c.name).where(mine)).scalar_one()
        return token, name

    def _open(self, code: str) -> None:
        """BoardError unless the class ``code`` exists and its teacher has not closed it."""
        self.title(code)
        with self.engine.connect() as db:
            if db.execute(sa.select(closed.c.class_code).where(closed.c.class_code == code)).first() is not None:
                raise BoardError(f"The class {code} is closed: ask your teacher.", field="class code")

    def _assigned(self, code: str, challenge_id: object) -> str:
        """The title of ``challenge_id`` as the teacher set it for class ``code``, or BoardError (not set)."""
        with self.engine.connect() as db:
            title = db.execute(
                sa.select(assigned.c.challenge_title).where(
                    assigned.c.class_code == code, assigned.c.challenge_id == challenge_id
                )
            ).scalar()
        if title is None:
            raise BoardError(
                f"this challenge was not set by the teacher of class {code} (only the challenges your teacher set, "
                "exactly as set, are handed in)",
                field="challenge",
            )
        return title

    @_db_errors
    def assign(self, code: str, challenge_id: str, title: str, link: str) -> bool:
        """Set the challenge with content key ``challenge_id`` for class ``code``; False if it was set already."""
        code = normal_code(code)
        self.title(code)
        row = dict(
            class_code=code,
            challenge_id=_text(challenge_id, "challenge id", MAX_CHALLENGE_ID_CHARS),
            challenge_title=_text(_visible(title), "challenge title", MAX_CHALLENGE_TITLE_CHARS),
            link=str(link)[: 4 * MAX_LINK_CHARS],
            assigned_at=_now(),
        )
        try:
            with self.engine.begin() as db:
                db.execute(assigned.insert().values(**row))
        except IntegrityError:
            return False
        return True

    @_db_errors
    def assignments(self, code: str) -> list[Assigned]:
        """The challenges set for class ``code``, in the order they were set."""
        code = normal_code(code)
        query = (
            sa.select(assigned.c.challenge_id, assigned.c.challenge_title, assigned.c.link)
            .where(assigned.c.class_code == code)
            .order_by(assigned.c.assigned_at, assigned.c.challenge_id)
        )
        with self.engine.connect() as db:
            return [Assigned(r.challenge_id, r.challenge_title, r.link) for r in db.execute(query)]

    @_db_errors
    def close_class(self, code: str) -> None:
        """Close the class ``code``: nobody joins or hands in from now on; its board stays readable."""
        code = normal_code(code)
        self.title(code)
        try:
            with self.engine.begin() as db:
                db.execute(closed.insert().values(class_code=code, closed_at=_now()))
        except IntegrityError:  # closed already
            pass

    @_db_errors
    def reopen_class(self, code: str) -> None:
        """Open the closed class ``code`` again: students join and hand in as before (nothing was lost)."""
        code = normal_code(code)
        self.title(code)
        with self.engine.begin() as db:
            db.execute(closed.delete().where(closed.c.class_code == code))

    @_db_errors
    def is_closed(self, code: str) -> bool:
        code = normal_code(code)
        with self.engine.connect() as db:
            return db.execute(sa.select(closed.c.class_code).where(closed.c.class_code == code)).first() is not None

    @_db_errors
    def rename(self, code: str, name: str, new_name: str) -> None:
        """Give the student ``name`` of class ``code`` the display name ``new_name`` (her token stays hers)."""
        code, new_name = normal_code(code), _text(new_name, "display name", MAX_NAME_CHARS)
        with self.engine.connect() as db:  # read first: a read that turns into a write can deadlock SQLite
            mine = (students.c.class_code == code) & (students.c.name == name)
            sid = db.execute(sa.select(students.c.id).where(mine)).scalar()
            if sid is None:
                raise BoardError(_no_student(name, code), field="display name")
            _name_free(db, code, new_name, but=sid)
        try:
            with self.engine.begin() as db:  # the name keys' unique index settles a race with another replica
                db.execute(students.update().where(students.c.id == sid).values(name=new_name))
                db.execute(name_keys.delete().where(name_keys.c.student_id == sid))
                db.execute(name_keys.insert().values(class_code=code, key=name_key(new_name), student_id=sid))
        except IntegrityError:
            raise _taken(new_name, new_name) from None

    @_db_errors
    def remove(self, code: str, name: str) -> Removed:
        """Take the student ``name`` out of class ``code``, with their solves and progress (their token stops
        working); what was taken, for :meth:`undo_remove`."""
        code = normal_code(code)
        with self.engine.begin() as db:
            row = db.execute(sa.select(students).where(students.c.class_code == code, students.c.name == name)).first()
            if row is None:
                raise BoardError(_no_student(name, code), field="display name")
            sid, taken = row.id, {"board_students": (dict(row._mapping),)}
            for table in (solves, numbers, handins, progress, own_marks, rejoins, refusals, name_keys):
                taken[table.name] = tuple(
                    dict(r._mapping) for r in db.execute(sa.select(table).where(table.c.student_id == sid))
                )
                db.execute(table.delete().where(table.c.student_id == sid))
            db.execute(students.delete().where(students.c.id == sid))
        return Removed(code, name, tuple(taken.items()))

    @_db_errors
    def undo_remove(self, removed: Removed) -> None:
        """Bring back a student :meth:`remove` took out, with their solves and progress, as they were."""
        tables = (students, solves, numbers, handins, progress, own_marks, rejoins, refusals, name_keys)
        by_name = {t.name: t for t in tables}
        try:
            with self.engine.begin() as db:
                for name, rows in removed.rows:  # the student first: the others refer to them
                    if rows:
                        db.execute(by_name[name].insert(), [dict(r) for r in rows])
        except IntegrityError:
            raise BoardError(
                f"{removed.name!r} cannot come back: someone in class {removed.code} now uses that name.",
                field="display name",
            ) from None

    @_db_errors
    def report(self, code: str, token: str, challenge_id: str, value: str) -> None:
        """Keep ``value`` as the latest value of an assigned goal for the student holding ``token`` until they solve
        it (then the solving value stays); refused (BoardError) once the class is closed."""
        code = normal_code(code)
        student_id, _ = self.student(code, token)
        self._open(code)
        self._assigned(code, challenge_id)
        value = _text(_visible(value), "value", MAX_VALUE_CHARS)
        key, cid = (progress.c.student_id == student_id) & (progress.c.challenge_id == challenge_id), challenge_id
        with self.engine.begin() as db:
            solved = sa.select(solves.c.id).where(solves.c.student_id == student_id, solves.c.challenge_id == cid)
            if db.execute(solved).first() is not None:  # solved: the solving value stays (a later tab's does not)
                return
            db.execute(progress.delete().where(key))
            db.execute(
                progress.insert().values(
                    student_id=student_id, challenge_id=challenge_id, value=value, updated_at=_now()
                )
            )

    @_db_errors
    def standings(self, code: str) -> tuple[list[Assigned], list[Standing]]:
        """The challenges set for class ``code`` and every student who joined it, one Standing each (in the order
        they joined), whether or not she has started anything."""
        code = normal_code(code)
        tasks = self.assignments(code)
        with self.engine.connect() as db:
            people = db.execute(
                sa.select(students.c.id, students.c.name).where(students.c.class_code == code).order_by(students.c.id)
            ).all()
            ids = [p.id for p in people]
            values = {
                (r.student_id, r.challenge_id): r.value
                for r in db.execute(sa.select(progress).where(progress.c.student_id.in_(ids)))
            }
            done = {
                (r.student_id, r.challenge_id): (_utc(r.solved_at), r.link, r.id)
                for r in db.execute(sa.select(solves).where(solves.c.class_code == code))
            }
            changed = {
                (r.student_id, r.challenge_id): r.edits
                for r in db.execute(sa.select(handins).where(handins.c.student_id.in_(ids)))
            }
            why = {
                (r.student_id, r.challenge_id): r.reason
                for r in db.execute(sa.select(refusals).where(refusals.c.student_id.in_(ids)))
            }
        rows = []
        for p in people:
            cells = []
            for a in tasks:
                key = (p.id, a.challenge_id)
                when, link, sid = done.get(key, (None, None, None))
                edits = changed.get(key, "") if when else ""
                cells.append(Cell(values.get(key, ""), when, link, edits, sid, why.get(key, "")))
            rows.append(Standing(p.name, tuple(cells)))
        return tasks, rows

    @_db_errors
    def record(self, code: str, token: str, challenge_id: str, link: str, edits: str = "") -> bool:
        """Record that the student holding ``token`` solved ``challenge_id`` with the hand-in ``link`` (``edits``:
        what it changed, for the copy check); True if this is her first solve of it (a later one keeps the first
        time, link and numbers). Refused (BoardError) when the class is
        closed or its teacher did not set that challenge (by its content key: a copy under the same title is
        another challenge); the board shows the title the teacher set."""
        student_id, _ = self.student(code, token)
        self._open(normal_code(code))
        challenge_id = _text(challenge_id, "challenge id", MAX_CHALLENGE_ID_CHARS)
        challenge_title = self._assigned(normal_code(code), challenge_id)
        if not isinstance(link, str) or not 0 < len(link) <= 4 * MAX_LINK_CHARS:
            raise BoardError("The hand-in link is empty or too long.", field="link")
        row = dict(
            class_code=normal_code(code),
            student_id=student_id,
            challenge_id=challenge_id,
            challenge_title=challenge_title,
            link=link,
            solved_at=_now(),
        )
        edits = str(edits)[: 100 * 4096]
        try:
            with self.engine.begin() as db:
                db.execute(solves.insert().values(**row))
                if edits:
                    db.execute(handins.insert().values(student_id=student_id, challenge_id=challenge_id, edits=edits))
        except IntegrityError:  # solved before: the first solve counts
            return False
        return True

    @_db_errors
    def refuse(self, code: str, token: str, challenge_id: str, reason: str) -> None:
        """Keep that the student holding ``token`` reached the goal of ``challenge_id`` but it was not handed in, and
        why (``reason``, a clause: "the numbers arrived whole, by a link"); the board shows "refused: WHY" until a
        solve is handed in. Kept after the class closed too (a solve that came too late is worth knowing)."""
        code = normal_code(code)
        student_id, _ = self.student(code, token)
        self._assigned(code, challenge_id)
        reason = _text(_visible(reason), "reason", 200)
        key = (refusals.c.student_id == student_id) & (refusals.c.challenge_id == challenge_id)
        with self.engine.begin() as db:
            db.execute(refusals.delete().where(key))
            db.execute(
                refusals.insert().values(
                    student_id=student_id, challenge_id=challenge_id, reason=reason, refused_at=_now()
                )
            )

    @_db_errors
    def secret(self) -> bytes:
        """The board's random secret for signing kept teacher keys and own-work marks, made on first use and kept in
        the database (so every replica signs and checks with the same one; never the typed teacher key, which a seen
        value would let anyone guess offline)."""
        if self._secret is None:
            with self.engine.begin() as db:
                got = db.execute(sa.select(secret.c.value).where(secret.c.name == "teacher_link")).scalar()
            if got is None:
                try:
                    with self.engine.begin() as db:
                        db.execute(secret.insert().values(name="teacher_link", value=secrets.token_hex(32)))
                except IntegrityError:  # another replica made it first: use that one
                    pass
                with self.engine.connect() as db:
                    got = db.execute(sa.select(secret.c.value).where(secret.c.name == "teacher_link")).scalar_one()
            self._secret = got.encode()
        return self._secret

    def teacher_pass(self, key: str, issued: float | None = None) -> str:
        """The value of the signed cookie that keeps a browser's teacher key: "ISSUED.SIG", signed by :meth:`secret`
        over the issue time (whole seconds since 1970) and a hash of the server's teacher key (so a new key ends
        every kept one). It holds neither the key nor a class: the key itself is never stored in the browser."""
        issued = int(time.time() if issued is None else issued)
        return f"{issued}.{self._sign_pass(key, issued)}"

    def check_teacher_pass(self, value: object, key: str, now: float | None = None) -> int:
        """The issue time of a kept teacher key, or BoardError (unreadable, forged, another key, or older than
        LINK_HOURS)."""
        parts = str(value)[:200].split(".")
        if len(parts) != 2 or not parts[0].isdigit() or len(parts[0]) > 12:
            raise BoardError("This browser's kept teacher key does not read: type the teacher key.", field="teacher")
        issued = int(parts[0])
        if not key or not hmac.compare_digest(parts[1].encode(), self._sign_pass(key, issued).encode()):
            raise BoardError("This browser's kept teacher key does not check out: type the key.", field="teacher")
        age = (time.time() if now is None else now) - issued
        if not -300 <= age <= LINK_HOURS * 3600:
            raise BoardError(
                f"This browser kept the teacher key for {LINK_HOURS} hours: type it again.", field="teacher"
            )
        return issued

    def _sign_pass(self, key: str, issued: int) -> str:
        kept = hashlib.sha256(key.encode()).hexdigest()
        return hmac.new(self.secret(), f"teacher-pass:{issued}:{kept}".encode(), hashlib.sha256).hexdigest()[:32]

    @_db_errors
    def closed_at(self, code: str) -> datetime | None:
        """When the class ``code`` was closed (UTC), or None while it is open."""
        code = normal_code(code)
        with self.engine.connect() as db:
            when = db.execute(sa.select(closed.c.closed_at).where(closed.c.class_code == code)).scalar()
        return _utc(when) if when is not None else None

    @_db_errors
    def solves(self, code: str) -> list[Solve]:
        """Every solve of the class ``code``, oldest first."""
        code = normal_code(code)
        query = (
            sa.select(
                students.c.name, solves.c.challenge_id, solves.c.challenge_title, solves.c.solved_at, solves.c.link
            )
            .join(students, students.c.id == solves.c.student_id)
            .where(solves.c.class_code == code, students.c.class_code == code)
            .order_by(solves.c.solved_at, solves.c.id)
        )
        with self.engine.connect() as db:
            return [
                Solve(r.name, r.challenge_id, r.challenge_title, _utc(r.solved_at), r.link) for r in db.execute(query)
            ]

    @_db_errors
    def solve_by_id(self, code: str, solve_id: int) -> Solve:
        """The solve ``solve_id`` of class ``code`` (a short link's), or BoardError when the class has no such solve."""
        code = normal_code(code)
        query = (
            sa.select(
                students.c.name, solves.c.challenge_id, solves.c.challenge_title, solves.c.solved_at, solves.c.link
            )
            .join(students, students.c.id == solves.c.student_id)
            .where(solves.c.class_code == code, solves.c.id == int(solve_id))
        )
        with self.engine.connect() as db:
            r = db.execute(query).first()
        if r is None:
            raise BoardError(f"Class {code} has no hand-in {int(solve_id)}: its student may have been removed.")
        return Solve(r.name, r.challenge_id, r.challenge_title, _utc(r.solved_at), r.link)

    @_db_errors
    def roster(self, code: str) -> list[str]:
        """The display names of the class ``code``, in the order they joined."""
        code = normal_code(code)
        query = sa.select(students.c.name).where(students.c.class_code == code).order_by(students.c.id)
        with self.engine.connect() as db:
            return list(db.execute(query).scalars())


def _name_free(db: sa.Connection, code: str, name: str, but: int | None = None) -> None:
    """BoardError when someone in class ``code`` (other than student ``but``) has a name that compares as ``name``
    (:func:`name_key`); read from the names themselves, so students who joined before the keys were kept count."""
    key = name_key(name)
    for sid, other in db.execute(sa.select(students.c.id, students.c.name).where(students.c.class_code == code)):
        if sid != but and name_key(other) == key:
            raise _taken(other, name)


def _taken(taken: str, name: str) -> BoardError:
    """The refusal of ``name`` when ``taken`` is in the class already (the same name, or one that looks the same)."""
    same = "" if taken == name else f", which looks the same as {name!r}"
    return BoardError(
        f"Someone in this class already uses the name {taken!r}{same}; choose another.", field="display name"
    )


def _hash(secret: str) -> str:
    """What the store keeps of a secret (a token or a rejoin ticket): its sha256, so the database never holds one that
    works, and a lookup's timing tells at most a hash's prefix."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _no_student(name: str, code: str) -> str:
    """The refusal for a student name not in the class (or none chosen)."""
    if not name:
        return "Choose a student first."
    return f"There is no student {name!r} in class {code}."


def _utc(t: datetime) -> datetime:
    """SQLite hands back naive datetimes: they were stored in UTC."""
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: a leading =, +, - or @ would start a formula there."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def board_csv(tasks: list[Assigned], rows: list[Standing], base: str = "", code: str = "") -> str:
    """The board as CSV for a grade book, one line per student: for each challenge set, the goal's value as a number
    (the solving value once solved), its status in the board's words, when it was solved in UTC (and in the server's
    time zone, when that is not UTC), and a short link to the hand-in (the teacher page opens it, by id); then how
    many challenges the student solved. Times read "2026-12-06 21:03:05": a spreadsheet reads them as times, pandas
    with ``parse_dates``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    here = datetime.now().astimezone()
    local = here.utcoffset() != timedelta(0)  # on a UTC server a second column would repeat the first
    head = ["student"]
    for a in tasks:
        whats = ("value", "status", "solved at (UTC)")
        whats += (f"solved at (server time, {here.strftime('%Z, UTC%z')})",) if local else ()
        head += [f"{a.title}: {what}" for what in (*whats, "hand-in link")]
    writer.writerow([_cell(h) for h in [*head, f"challenges solved (of {len(tasks)})"]])
    for r in rows:
        line = [_cell(r.name)]
        for c in r.cells:
            zones = (c.solved_at.astimezone(UTC), c.solved_at.astimezone())[: 1 + local] if c.solved_at else ()
            when = [t.strftime("%Y-%m-%d %H:%M:%S") for t in zones] or [""] * (1 + local)
            number = "" if c.number is None else repr(c.number)  # digits only: a spreadsheet reads a number
            line += [number, c.status, *when, short_link(code, c.solve_id, base) if c.solve_id is not None else ""]
        writer.writerow([*line, str(sum(c.solved_at is not None for c in r.cells))])
    return out.getvalue()


def short_link(code: str, solve_id: int, base: str = "") -> str:
    """The short link to one hand-in, by its id: the teacher page (key needed) opens it."""
    return full_link(f"class_board?class={code}&solve={int(solve_id)}", base)


def full_link(link: str, base: str) -> str:
    """``link`` as a full address: as it is when it names its scheme, else after ``base`` (the app's address)."""
    if "://" in link.split("?", 1)[0] or not base:
        return link
    return base.rstrip("/") + "/" + link.lstrip("/")
