"""The release: .github/workflows/release.yml cannot run here, so its essentials are read from
it (a tag v* starts it, the tag must be v + the package's version, the files the release check
built and checked are the ones published, by trusted publishing), its tag check is run, and
the release check (.ci/wheel_check.sh, which CI runs too) is held to the README's main job."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contrastkit import __version__

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text())
JOBS = WORKFLOW["jobs"]
WHEEL_CHECK = ".ci/wheel_check.sh"


def _steps(job: str, key: str, pattern: str) -> list[tuple[int, dict]]:
    """The steps of ``job`` (with their positions) whose ``key`` (run, uses) matches."""
    return [(number, step) for number, step in enumerate(JOBS[job]["steps"])
            if re.search(pattern, step.get(key, ""))]


def test_a_version_tag_starts_the_release_and_nothing_else():
    trigger = WORKFLOW.get("on", WORKFLOW.get(True))  # YAML 1.1 reads the key on as True
    assert trigger == {"push": {"tags": ["v*"]}}
    assert WORKFLOW["permissions"] == {"contents": "read"}  # the publish job alone gets more


def _tag_check(tag: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run the build job's tag check as GitHub runs a bash step, with this Python as python."""
    ((_, step),) = _steps("build", "run", r"GITHUB_REF_NAME")
    assert WORKFLOW["defaults"]["run"]["shell"] == "bash"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "GITHUB_REF_NAME": tag,
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_the_tag_check_passes_the_version_tag(tmp_path):
    done = _tag_check(f"v{__version__}", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("tag", [f"v{__version__}.1", __version__, "v0.0.0"])
def test_the_tag_check_refuses_any_other_tag(tag, tmp_path):
    done = _tag_check(tag, tmp_path)
    assert done.returncode != 0
    assert f"the tag {tag} is not v{__version__}" in done.stdout


def test_the_build_job_checks_the_tag_then_runs_the_release_check():
    ((tag_check, _),) = _steps("build", "run", r"GITHUB_REF_NAME")
    ((wheel_check, step),) = _steps("build", "run", re.escape(WHEEL_CHECK))
    assert tag_check < wheel_check and (ROOT / WHEEL_CHECK).is_file()
    assert step["run"].split() == ["bash", WHEEL_CHECK, "dist"]
    assert f"bash {WHEEL_CHECK}" in (ROOT / ".ci/run").read_text()  # CI runs the same check
    ((upload, uploaded),) = _steps("build", "uses", r"^actions/upload-artifact@")
    assert wheel_check < upload and uploaded["with"]["path"].rstrip("/") == "dist"


def test_the_publish_job_uploads_the_checked_files_by_trusted_publishing():
    publish = JOBS["publish"]
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}
    ((_, uploaded),) = _steps("build", "uses", r"^actions/upload-artifact@")
    ((download, downloaded),) = _steps("publish", "uses", r"^actions/download-artifact@")
    ((pypi, step),) = _steps("publish", "uses", r"^pypa/gh-action-pypi-publish@")
    assert download < pypi and downloaded["with"]["name"] == uploaded["with"]["name"]
    assert downloaded["with"]["path"].rstrip("/") == "dist"  # where the action reads
    assert not {"password", "user", "packages-dir"} & set(step.get("with", {}))


def test_the_release_check_runs_the_readme_main_job():
    """Each ``contrastkit`` command of the README's main job is a line of the release check."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Main job"):]
    command = re.search(r"```bash\n(.*?)\n```", section, re.S).group(1)
    job = [part.strip().removeprefix(".venv/bin/") for part in command.split("&&")
           if "contrastkit " in part]
    assert [part.split()[:2] for part in job] == [["contrastkit", "pretrain"],
                                                   ["contrastkit", "evaluate"]]
    lines = (ROOT / WHEEL_CHECK).read_text().splitlines()
    assert all(part in lines for part in job), job
