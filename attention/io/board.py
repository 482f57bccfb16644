"""A class board: classes a teacher opens, students who join with its code, and the challenges each one solved.

One database through SQLAlchemy, named by a URL: an SQLite file for one server (nothing to install, survives a
restart), any database SQLAlchemy speaks for several replicas (PostgreSQL: ``postgresql+psycopg://...``). Every
query names its class, so one class's code never reads another's. A student is known by a secret token given when
she joins (her browser session keeps it), never by her display name. This module only stores: whether a hand-in
solves its challenge is decided by the caller, from the numbers the link carries, before :meth:`Board.record`.

    board = Board("sqlite:///board.sqlite3")
    code = board.open_class("Tuesday lab")             # 'K7QX2M': the teacher writes it on the board
    token = board.join(code, "Ada")                    # the student's secret
    board.record(code, token, "sharpen_one_row", "Sharpen one row", "https://.../?challenge=...")
    board.solves(code)                                 # [Solve(name='Ada', challenge_id=..., ...)]
"""

from __future__ import annotations

import csv
import functools
import io
import logging
import secrets
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
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
    sa.Column("token", sa.String(64), nullable=False, unique=True),
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
            self.engine = sa.create_engine(url, pool_pre_ping=True)
        except (ValueError, ImportError, sa.exc.ArgumentError) as exc:  # a URL it cannot read, a driver not installed
            raise BoardError(f"The class board's database URL cannot be used ({type(exc).__name__}).") from None
        _meta.create_all(self.engine)

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
        self.title(code)
        token = secrets.token_urlsafe(24)
        try:
            with self.engine.begin() as db:
                db.execute(students.insert().values(class_code=code, name=name, token=token, joined_at=_now()))
        except IntegrityError:
            raise BoardError(
                f"Someone in this class already uses the name {name!r}; choose another.", field="display name"
            ) from None
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
                    students.c.class_code == code, students.c.token == token
                )
            ).first()
        if row is None:
            raise BoardError(f"This browser has not joined the class {code}.", field="class code")
        return row.id, row.name

    @_db_errors
    def record(self, code: str, token: str, challenge_id: str, challenge_title: str, link: str) -> bool:
        """Record that the student holding ``token`` solved ``challenge_id`` with the hand-in ``link``; True if this
        is her first solve of it (a later one keeps the first time and link)."""
        student_id, _ = self.student(code, token)
        challenge_id = _text(challenge_id, "challenge id", MAX_CHALLENGE_ID_CHARS)
        challenge_title = _text(_visible(challenge_title), "challenge title", MAX_CHALLENGE_TITLE_CHARS)
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
        try:
            with self.engine.begin() as db:
                db.execute(solves.insert().values(**row))
        except IntegrityError:  # solved before: the first solve counts
            return False
        return True

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
    def roster(self, code: str) -> list[str]:
        """The display names of the class ``code``, in the order they joined."""
        code = normal_code(code)
        query = sa.select(students.c.name).where(students.c.class_code == code).order_by(students.c.id)
        with self.engine.connect() as db:
            return list(db.execute(query).scalars())


def _utc(t: datetime) -> datetime:
    """SQLite hands back naive datetimes: they were stored in UTC."""
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: a leading =, +, - or @ would start a formula there."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def solves_csv(rows: list[Solve]) -> str:
    """The board as CSV: one line per solve (student, challenge, its title, UTC time, hand-in link)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", "challenge", "challenge title", "solved at (UTC)", "hand-in link"])
    for s in rows:
        when = s.solved_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
        writer.writerow([_cell(s.name), _cell(s.challenge_id), _cell(s.challenge_title), when, _cell(s.link)])
    return out.getvalue()
