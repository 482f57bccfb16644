"""The engine as a package: pyproject.toml names every engine package, and its dependencies keep requirements.txt's
pins (the wheel itself is built and used from another folder in tests/deploy/test_wheel.py)."""

from __future__ import annotations

import re
import tomllib

from tests.helpers import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUP = PROJECT["tool"]["setuptools"]


def _engine_packages() -> set[str]:
    """Every folder under attention/ with an __init__.py, outside attention/ui (the dashboard stays in the checkout)."""
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "attention").rglob("__init__.py")}
    return {name for name in found if name != "attention.ui" and not name.startswith("attention.ui.")}


def _pins(lines: list[str]) -> dict[str, str]:
    """{package name (lower case, extras dropped): its version specifier}."""
    pins = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(.*)", line)
        if match and not line.startswith("-"):
            pins[match[1].lower().replace("_", "-")] = match[3].replace(" ", "")
    return pins


def test_the_wheel_lists_every_engine_package_and_the_shipped_folders() -> None:
    listed = set(SETUP["packages"])
    assert listed - {"attention.presets", "attention.challenges"} == _engine_packages()
    assert SETUP["package-dir"] == {"attention.presets": "presets", "attention.challenges": "challenges"}
    assert not any(name.startswith("attention.ui") for name in listed)


def test_the_packages_dependencies_keep_the_apps_pins() -> None:
    """One version range per package: what pyproject.toml asks for is what requirements.txt pins."""
    pinned = _pins((ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())
    declared = PROJECT["project"]["dependencies"] + [d for extra in PROJECT["project"]["optional-dependencies"].values()
                                                     for d in extra]
    for name, spec in _pins(declared).items():
        assert name in pinned, f"{name} is in pyproject.toml but not in requirements.txt"
        assert spec == pinned[name], f"{name}: pyproject.toml {spec!r}, requirements.txt {pinned[name]!r}"


def test_streamlit_is_not_an_engine_dependency() -> None:
    assert not any(d.lower().startswith("streamlit") for d in PROJECT["project"]["dependencies"])
