"""The package as built: its version set in one place (``contrastkit.__version__``, which the
build reads), the license declared in the SPDX form with its file (setuptools >= 77 copies
LICENSE into the wheel's dist-info/licenses); a slow test builds the wheel and looks inside."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contrastkit import __version__

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_build_reads_the_version_from_the_package():
    """pyproject.toml writes no version of its own: one written there too could disagree with
    ``contrastkit.__version__``, which ``contrastkit --version`` and the run records report."""
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "contrastkit.__version__"}


def test_pyproject_declares_the_mit_license_and_its_file():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"  # an SPDX expression, not the deprecated table
    assert project["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))


def test_the_build_needs_a_setuptools_that_reads_the_spdx_form():
    (setuptools,) = [r for r in PYPROJECT["build-system"]["requires"]
                     if r.startswith("setuptools")]
    minimum = re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", setuptools.replace(" ", ""))
    assert minimum and int(minimum.group(1)) >= 77, setuptools


def test_the_license_file_is_mit_of_the_contrastkit_authors():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the contrastkit authors" in text
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text


def test_the_changelog_has_an_unreleased_section():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n")
    assert "\n## Unreleased\n" in text


@pytest.mark.slow
def test_the_wheel_carries_the_version_the_license_and_the_recipes(tmp_path):
    """A wheel built from a copy of the source (offline: the installed setuptools, no
    isolation) is of the package's version, and holds the license in its dist-info, every
    shipped recipe and the ``py.typed`` marker."""
    import shutil
    import subprocess
    import sys
    import zipfile

    source = tmp_path / "source"
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-w", str(tmp_path / "dist"), str(source)],
                   check=True, capture_output=True, text=True, timeout=600)
    (wheel,) = (tmp_path / "dist").glob("contrastkit-*.whl")
    assert wheel.name == f"contrastkit-{__version__}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    metadata = zipfile.ZipFile(wheel).read(f"contrastkit-{__version__}.dist-info/METADATA")
    assert f"\nVersion: {__version__}\n" in metadata.decode()
    licenses = [name for name in names if re.search(r"\.dist-info/licenses/LICENSE$", name)]
    assert licenses and "MIT License" in zipfile.ZipFile(wheel).read(licenses[0]).decode()
    assert "contrastkit/py.typed" in names  # PEP 561: type checkers read the annotations
    shipped = sorted(path.relative_to(ROOT / "src").as_posix()
                     for path in (ROOT / "src/contrastkit/experiments/recipes").rglob("*.yaml"))
    assert shipped and set(shipped) <= set(names)
