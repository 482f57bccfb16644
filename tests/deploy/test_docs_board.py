"""docs/deploying.md's PostgreSQL steps, run as written on a throwaway cluster (issue 41 §3): a hand-made cluster
(initdb as the postgres user), started with pg_ctl on a port of its own, a role with a password, its database,
password authentication in pg_hba.conf, then the board's URL: the board makes the tables the docs list, and a
wrong password is refused. Steps on the machine's own cluster (pg_ctlcluster, systemctl) are marked as not run."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from attention.io import board as board_mod
from attention.io.board import Board, BoardError

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "deploying.md").read_text(encoding="utf-8")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_docs_list_the_boards_tables() -> None:
    listed = re.search(r"(\d+) tables, (`board_\w+`(?:, `board_\w+`)*)", re.sub(r"\s+", " ", DOC))
    assert listed, "deploying.md lists no tables"
    names = re.findall(r"`(board_\w+)`", listed.group(2))
    assert int(listed.group(1)) == len(names) and sorted(names) == sorted(board_mod._meta.tables)


def test_the_docs_postgresql_steps_as_written(tmp_path: Path) -> None:
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins or os.geteuid() != 0:
        pytest.skip("needs Debian's postgresql package and root (the steps run commands as the postgres user)")
    bindir, port = Path(bins[-1]).parent, _free_port()
    home = Path(tempfile.mkdtemp(prefix="board-doc-"))
    shutil.chown(home, "postgres")
    data, sock = home / "board", str(home)
    as_pg = ["runuser", "-u", "postgres", "--"]
    for step in (
        "initdb -D",
        "pg_ctl -D",
        "CREATE ROLE attention LOGIN PASSWORD",
        "createdb -p 5433 -O attention",
        "scram-sha-256",
    ):
        assert step in DOC.replace("\n   ", " "), step  # the docs say what this test runs
    run = lambda *cmd: subprocess.run([*as_pg, *cmd], check=True, capture_output=True, text=True)  # noqa: E731
    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "postgres")  # step 1
        opts = f"-p {port} -c listen_addresses=127.0.0.1 -k {sock}"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(home / "board.log"), "-w", "start")  # 2
        run(str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port))
        psql = [str(bindir / "psql"), "-h", sock, "-p", str(port)]
        run(*psql, "-c", "CREATE ROLE attention LOGIN PASSWORD 'a long password'")  # step 3
        run(str(bindir / "createdb"), "-h", sock, "-p", str(port), "-O", "attention", "attention_board")  # step 4
        hba = data / "pg_hba.conf"  # step 5: password authentication on the host lines
        text = re.sub(r"^(host\s.*\s)trust$", r"\1scram-sha-256", hba.read_text(), flags=re.M)
        hba.write_text(text)
        run(str(bindir / "pg_ctl"), "-D", str(data), "reload")
        url = f"postgresql+psycopg://attention:a%20long%20password@127.0.0.1:{port}/attention_board"  # step 6
        board = Board(url)  # step 7: the tables are made on first use
        code = board.open_class("From the docs")
        assert board.title(code) == "From the docs"
        with board.engine.connect() as db:
            tables = set(sa.inspect(db).get_table_names())
        assert tables == set(board_mod._meta.tables)
        board.engine.dispose()
        with pytest.raises(BoardError, match="cannot be reached"):
            Board(url.replace("a%20long%20password", "wrong"))  # the password is asked now
    finally:
        subprocess.run([*as_pg, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def test_teaching_md_and_the_board_page_agree_on_when_to_open_a_class() -> None:
    teaching = re.sub(r"\s+", " ", (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8"))
    page = (ROOT / "attention" / "ui" / "labpages" / "board.py").read_text(encoding="utf-8")
    assert "open it and set its challenges **before the lesson**" in teaching
    assert "Open the class before the lesson" in page and "when the lesson starts" not in page
    assert "6 tables" not in DOC and "teacher=CODE" not in DOC  # the old claims are gone
    assert "```" not in teaching or "streamlit run" not in teaching  # teaching.md runs no command of its own
