"""What ships: a wheel built from this tree holds every module under the `convc`
names (and nothing under the source folder names), declares both console scripts,
and works when unpacked on its own. The pass registry matches the pass files."""

from __future__ import annotations

import configparser
import importlib
import importlib.util
import inspect
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from convc.pass_manager import Pass
from convc.passes import ALL_PASSES, PASSES

REPO_ROOT = Path(__file__).resolve().parents[2]
# source folder -> where its files live in the wheel (pyproject's package-dir)
PACKAGE_DIRS = {"compiler": "convc", "passes": "convc/passes", "tools": "convc/tools"}
SUBPACKAGES = ("convc", "convc/passes", "convc/tools", "convc/ops", "convc/emit", "convc/frontend", "convc/textual")
BUILD_INPUTS = ("pyproject.toml", "README.md")


def source_files(folder: str, pattern: str = "*.py") -> list[Path]:
    root = REPO_ROOT / folder
    return sorted(p.relative_to(root) for p in root.rglob(pattern) if "__pycache__" not in p.parts)


def local_setuptools_builds_wheels() -> bool:
    """Build with what is installed (fast, offline) when it can: setuptools>=70.1 writes wheels
    itself, so pyproject's `wheel` requirement need not be installed. Else build isolated."""
    try:
        major, minor = (int(part) for part in metadata.version("setuptools").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (70, 1) or ((major, minor) >= (68, 0) and importlib.util.find_spec("wheel") is not None)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    """Build from a copy of the sources, so the shared working tree gets no build/ or egg-info."""
    pytest.importorskip("build")
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    for folder in PACKAGE_DIRS:
        shutil.copytree(REPO_ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in BUILD_INPUTS:
        shutil.copy2(REPO_ROOT / name, source / name)
    isolation = ["--no-isolation", "--skip-dependency-check"] if local_setuptools_builds_wheels() else []
    subprocess.run([sys.executable, "-m", "build", "--wheel", *isolation, "--outdir", str(work / "dist"), str(source)],
                   check=True, capture_output=True, timeout=300)
    (path,) = (work / "dist").glob("convc-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield archive


@pytest.mark.slow
def test_wheel_holds_every_module_under_convc(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    expected = {f"{prefix}/{path.as_posix()}" for folder, prefix in PACKAGE_DIRS.items() for path in source_files(folder)}
    assert sorted(expected - names) == [], "modules missing from the wheel (is a subpackage missing from pyproject's packages?)"
    for package in SUBPACKAGES:
        assert f"{package}/__init__.py" in names
    assert {f"convc/{path.as_posix()}" for path in source_files("compiler", "*.json")} <= names
    assert "convc/py.typed" in names


@pytest.mark.slow
def test_wheel_has_no_source_folder_packages(wheel: zipfile.ZipFile) -> None:
    top_level = {name.split("/")[0] for name in wheel.namelist()}
    assert top_level - {"convc"} == {name for name in top_level if name.endswith(".dist-info")}
    assert not top_level & set(PACKAGE_DIRS)
    (info,) = [name for name in wheel.namelist() if name.endswith(".dist-info/top_level.txt")]
    assert wheel.read(info).decode().split() == ["convc"]


@pytest.mark.slow
def test_wheel_declares_both_console_scripts(wheel: zipfile.ZipFile) -> None:
    (path,) = [name for name in wheel.namelist() if name.endswith(".dist-info/entry_points.txt")]
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel.read(path).decode())
    scripts = dict(entry_points["console_scripts"])
    assert scripts == {"convc": "convc.cli:main", "convc-opt": "convc.cli:opt_main"}
    for target in scripts.values():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function))


WHEEL_SMOKE = """
import sys
import convc, convc.passes, convc.tools
from convc.cli import main
assert convc.__file__.startswith(sys.argv[1]), convc.__file__
sys.exit(main([sys.argv[2], "--emit", "convc"]))
"""


@pytest.mark.slow
def test_unpacked_wheel_compiles_a_model_on_its_own(wheel: zipfile.ZipFile, tmp_path: Path) -> None:
    """The wheel's own files (not this checkout) import and compile an example."""
    unpacked = tmp_path / "site"
    wheel.extractall(unpacked)
    env = dict(os.environ, PYTHONPATH=str(unpacked))
    done = subprocess.run([sys.executable, "-c", WHEEL_SMOKE, str(unpacked), str(REPO_ROOT / "examples" / "resnet_block.json")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("module @resnet_block")


# --- the pass registry matches the pass files ---------------------------------------------------------


def test_registry_keys_are_the_pass_names() -> None:
    assert list(PASSES) == [cls.name for cls in ALL_PASSES]
    for name, cls in PASSES.items():
        assert name == cls.name and issubclass(cls, Pass)


def pass_modules() -> list[str]:
    return sorted(path.stem for path in (REPO_ROOT / "passes").glob("*.py") if path.stem != "__init__")


@pytest.mark.parametrize("stem", pass_modules())
def test_each_pass_file_defines_one_registered_pass_named_after_it(stem: str) -> None:
    module = importlib.import_module(f"convc.passes.{stem}")
    defined: list[type[Pass]] = [cls for _, cls in inspect.getmembers(module, inspect.isclass)
                                 if issubclass(cls, Pass) and cls is not Pass and cls.__module__ == module.__name__]
    assert len(defined) == 1, f"passes/{stem}.py defines {len(defined)} passes (one pass per file)"
    (cls,) = defined
    assert PASSES.get(cls.name) is cls, f"{cls.__name__} is not registered in convc.passes"
    assert cls.name.replace("-", "_") == stem


def test_every_registered_pass_has_its_own_file() -> None:
    assert sorted(cls.name.replace("-", "_") for cls in ALL_PASSES) == pass_modules()
    for cls in ALL_PASSES:
        assert cls.__module__ == f"convc.passes.{cls.name.replace('-', '_')}"


@pytest.mark.parametrize("name", list(PASSES))
def test_every_registered_pass_has_a_lit_test_named_after_it(name: str) -> None:
    lit_file = REPO_ROOT / "tests" / "lit" / f"{name}.mlir"
    assert lit_file.is_file(), f"pass '{name}' has no lit test tests/lit/{name}.mlir"
    assert f"-p {name}" in lit_file.read_text() or f"-p \"{name}" in lit_file.read_text(), f"tests/lit/{name}.mlir never runs -p {name}"
