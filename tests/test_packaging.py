"""The license travels with the package: pyproject.toml declares it in the SPDX form with its
file (setuptools >= 77 copies LICENSE into the wheel's dist-info/licenses), and the file is
there. Building a wheel is too slow for the suite; this checks what the build reads."""

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
