"""The engine installs as a package: a wheel built from this checkout holds the engine (no Streamlit code), the
examples and the challenges, and the README's example runs from another folder with only the wheel on the path."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out, source = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
    for name in ("attention", "presets", "challenges"):  # a copy: setuptools writes its build folders beside the source
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True, capture_output=True, text=True, timeout=300, cwd=source,
    )
    (found,) = out.glob("attention_step_by_step-*.whl")
    return found


def test_the_wheel_holds_the_engine_and_its_data_but_no_streamlit_code(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "attention/model/model.py" in names and "attention/data/induction.npz" in names
    assert "attention/presets/the_cat_sat.json" in names and any(n.startswith("attention/challenges/") for n in names)
    assert not any(n.startswith("attention/ui/") for n in names)
    metadata = next(zipfile.ZipFile(wheel).read(n).decode() for n in names if n.endswith("METADATA"))
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist: streamlit")]
    assert requires and all("extra ==" in line for line in requires), requires


def test_the_readmes_example_runs_from_another_folder(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); exec(sys.argv[2])",
                           str(site), code], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    prints = [line for line in code.splitlines() if line.startswith("print(")]
    claims = [line.split("#", 1)[1].split(": ", 1)[0].split() for line in prints]
    assert [line.split() for line in done.stdout.splitlines()] == claims
    assert "attention" not in os.listdir(elsewhere)


# the engine's modules that need the dashboard's extra (pip install ".[app]"): the class board's store and charts as
# files; every other packaged module imports with the engine's own dependencies alone
NEEDS_APP = {"attention.io.board": "sqlalchemy", "attention.io.figures": "vl_convert"}
BLOCKED = ("streamlit", "sqlalchemy", "psycopg", "vl_convert", "pyarrow", "huggingface_hub", "torch", "transformers")


def test_every_packaged_module_imports_without_the_apps_packages(wheel: Path, tmp_path: Path) -> None:
    """With the dashboard's packages made unimportable, each module of the wheel imports, except the two that say
    they need the 'app' extra, and those fail only for their own package."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    modules = sorted(
        ".".join(Path(n).with_suffix("").parts).removesuffix(".__init__")
        for n in zipfile.ZipFile(wheel).namelist()
        if n.startswith("attention/") and n.endswith(".py")
    )
    code = (
        "import importlib, sys\n"
        f"for name in {BLOCKED!r}:\n    sys.modules[name] = None\n"
        f"for name in {modules!r}:\n"
        "    try:\n        importlib.import_module(name)\n"
        "    except ModuleNotFoundError as e:\n        print(name, e.name)\n"
    )
    done = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r})\n" + code],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    failed = dict(line.split() for line in done.stdout.splitlines())
    assert failed == NEEDS_APP, failed
