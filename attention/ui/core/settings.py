"""The server's own settings for a class, from ``.streamlit/secrets.toml`` or the environment, never the address.

In ``.streamlit/secrets.toml`` (the environment variable, when set, wins)::

    [lab]
    hide_solutions = true       # ATTENTION_HIDE_SOLUTIONS=1: no "Show a solution" for students
    hide_authoring = true       # ATTENTION_HIDE_AUTHORING=1: no form for writing a new challenge

    [board]                     # the class board, off unless a database is named
    url = "sqlite:///board.sqlite3"   # ATTENTION_BOARD_URL; postgresql+psycopg://... for several replicas
    teacher_key = "a long secret"     # ATTENTION_TEACHER_KEY: opens the Class board page

A setting that does not read as true or false hides (a lab setting fails closed) and the server's log says why;
nothing a student sends (a link, a widget value) can change a setting.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import streamlit as st

_LOG = logging.getLogger(__name__)
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


@dataclass(frozen=True)
class Settings:
    """What the server's owner decided for every session of this server."""

    hide_solutions: bool = False
    hide_authoring: bool = False
    board_url: str | None = None  # None: no class board
    teacher_key: str | None = None  # None: nobody can open the Class board page


def _secret(section: str, name: str) -> object | None:
    """``[section] name`` of the secrets file, or None when there is no such file, section or name."""
    try:
        part = st.secrets.get(section)
    except Exception:  # no secrets file, or one that does not parse: Streamlit raises its own errors for both
        return None
    return part.get(name) if hasattr(part, "get") else None


def _flag(section: str, name: str, env: str) -> bool:
    """A true/false setting: the environment variable ``env`` if set, else the secrets file, else False."""
    raw = os.environ.get(env)
    value: object = raw if raw is not None else _secret(section, name)
    if value is None or isinstance(value, bool):
        return bool(value)
    text = str(value)[:20].strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    _LOG.warning("lab setting %s / [%s] %s = %r is not true or false; treated as true", env, section, name, value)
    return True


def _text(section: str, name: str, env: str) -> str | None:
    """A text setting: the environment variable ``env`` if set and not empty, else the secrets file, else None."""
    value = os.environ.get(env) or _secret(section, name)
    if value is None or not str(value).strip():
        return None
    return str(value).strip()


def server_settings() -> Settings:
    """The settings in force now (read each run, so an edited secrets file applies to the next run)."""
    return Settings(
        hide_solutions=_flag("lab", "hide_solutions", "ATTENTION_HIDE_SOLUTIONS"),
        hide_authoring=_flag("lab", "hide_authoring", "ATTENTION_HIDE_AUTHORING"),
        board_url=_text("board", "url", "ATTENTION_BOARD_URL"),
        teacher_key=_text("board", "teacher_key", "ATTENTION_TEACHER_KEY"),
    )
