"""The license travels with the package: pyproject.toml declares it in the SPDX form with its
file (setuptools >= 77 copies LICENSE into the wheel's dist-info/licenses), and the file is
there; a slow test builds the wheel and looks inside."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


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
def test_the_wheel_carries_the_license_and_the_recipes(tmp_path):
    """A wheel built from a copy of the source (offline: the installed setuptools, no
    isolation) holds the license in its dist-info and every shipped recipe."""
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
    names = zipfile.ZipFile(wheel).namelist()
    licenses = [name for name in names if re.search(r"\.dist-info/licenses/LICENSE$", name)]
    assert licenses and "MIT License" in zipfile.ZipFile(wheel).read(licenses[0]).decode()
    shipped = sorted(path.relative_to(ROOT / "src").as_posix()
                     for path in (ROOT / "src/contrastkit/experiments/recipes").rglob("*.yaml"))
    assert shipped and set(shipped) <= set(names)
