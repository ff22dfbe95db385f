"""Documentation runs as written: every ```python block of the README and docs/*.md (one
namespace per file), and every docstring example (doctest) in the package."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import contrastkit

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(contrastkit.__path__, prefix="contrastkit.")
    if info.name != "contrastkit.__main__"
)


@pytest.fixture
def scratch_registries(monkeypatch):
    """Examples that register a loss, dataset or backbone register it for their test only."""
    from contrastkit.data import DATASETS
    from contrastkit.losses.registry import LOSSES
    from contrastkit.models import BACKBONES

    for registry in (LOSSES, DATASETS, BACKBONES):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_python_examples_run(document, tmp_path, monkeypatch, scratch_registries):
    blocks = PYTHON_BLOCK.findall(document.read_text())
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    namespace: dict = {"__name__": "__docs__"}
    for block in blocks:
        exec(compile(block, f"{document.name}", "exec"), namespace)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_the_docs_table_of_losses_is_the_registry():
    """docs/losses.md lists every registered loss with the capabilities its class declares."""
    from contrastkit import losses

    def mark(flag: bool) -> str:
        return "yes" if flag else "\u2014"

    text = (ROOT / "docs" / "losses.md").read_text()
    listed = re.findall(r"^\| `(\w+)` \| `losses\.\w+` \|", text, re.M)
    assert listed == list(losses.names(regularizers=True))
    for name in listed:
        cls = losses.get(name)
        settings = ", ".join(f"`{h}`" for h in cls.hyperparameters) or "\u2014"
        row = (f"| `{name}` | `losses.{cls.__name__}` | {settings} | {mark(cls.uses_labels)} | "
               f"{mark(cls.supports_chunking)} | {mark(cls.supports_distributed)} | "
               f"{'regularizer' if cls.regularizer else 'loss'} |")
        assert row in text, f"docs/losses.md: the row of {name} should read {row}"


def _section(document: Path, heading: str) -> str:
    text = document.read_text()
    assert heading in text, f"{document.name} has no section {heading!r}"
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def agrees(stated: str, printed: float) -> bool:
    """A figure the docs state agrees with the one printed to the precision it is stated in, give
    or take half a unit of its last digit more (float rounding on another machine)."""
    decimals = len(stated.partition(".")[2])
    return abs(float(stated) - printed) <= 1.5 * 10 ** -decimals


def test_readme_training_loop_example_learns(tmp_path, monkeypatch, capsys):
    """The first example a user runs must visibly work: its printed loss falls, the trained
    encoder's kNN accuracy on held-out points clearly beats the raw data's and the untrained
    encoder's, and the README states the figures it prints."""
    section = _section(ROOT / "README.md", "## Use a loss in your own training loop")
    block = PYTHON_BLOCK.findall(section)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {"__name__": "__docs__"})
    out = capsys.readouterr().out
    printed = {part: [float(value) for value in re.findall(rf"'{part}': ([-\d.e]+)", out)]
               for part in ("loss", "vrns")}
    assert len(printed["loss"]) >= 3
    assert printed["loss"][-1] < 0.5 * printed["loss"][0]
    knn = {name: float(value)
           for name, value in re.findall(r"kNN top-1, ([\w ]+): ([\d.]+) %", out)}
    assert set(knn) == {"raw data", "untrained", "trained"}
    assert knn["trained"] >= max(knn["raw data"], knn["untrained"]) + 20

    prose = " ".join(section.split())
    stated = {
        "loss": re.search(r"loss falls from about ([\d.]+) to ([\d.]+)", prose).groups(),
        "vrns": re.search(r"the VRNS part from ([\d.]+) to ([\d.]+)", prose).groups(),
        "knn": re.search(r"(\d+) % on the raw data, (\d+) % through the untrained encoder, "
                         r"(\d+) % through the trained one", prose).groups()}
    pairs = [*zip(stated["loss"], (printed["loss"][0], printed["loss"][-1]), strict=True),
             *zip(stated["vrns"], (printed["vrns"][0], printed["vrns"][-1]), strict=True),
             *zip(stated["knn"], (knn["raw data"], knn["untrained"], knn["trained"]),
                  strict=True)]
    assert all(agrees(text, value) for text, value in pairs), \
        f"README.md states {stated}; the example prints losses {printed} and kNN {knn}"


#: Folders of the development checkout that users do not have: cite papers, not these paths.
PRIVATE_PATH = re.compile(r"(?<![\w./-])(?:\.\./)?(?:shared|papers|spec)/")
PUBLISHED = [*DOCUMENTS, *sorted((ROOT / "src").rglob("*.py")),
             *sorted((ROOT / "benchmarks").rglob("*.py")), *sorted((ROOT / "examples").glob("*"))]


@pytest.mark.parametrize("path", PUBLISHED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_reference_to_folders_users_do_not_have(path):
    hits = [f"{path.name}:{number}: {line.strip()}"
            for number, line in enumerate(path.read_text().splitlines(), start=1)
            if PRIVATE_PATH.search(line)]
    assert not hits, "cite the paper (authors, title, venue, year, arXiv id) instead:\n" + \
        "\n".join(hits)


def test_readme_offers_the_cpu_only_torch_install_before_the_editable_one():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^```bash\n(.*?)^```", readme, re.S | re.M)
    cpu = [c for c in commands if "--index-url https://download.pytorch.org/whl/cpu" in c]
    assert cpu and cpu[0].index("whl/cpu") < cpu[0].index('pip install -e ".[train,dev]"')
    assert sum('pip install -e ".[train,dev]"' in c for c in commands) == 3  # main job, tests


BENCHMARKS = sorted(f"benchmarks.{path.stem}" for path in (ROOT / "benchmarks").glob("*.py")
                    if not path.stem.startswith("_"))


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_writes_the_docs_only_when_asked(name, capsys):
    module = importlib.import_module(name)
    with pytest.raises(SystemExit):
        module.main(["--help"])
    assert "--write-docs" in capsys.readouterr().out


def test_a_report_section_is_printed_and_written_only_with_write_docs(tmp_path, capsys):
    from benchmarks import _report

    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n")
    _report.publish("demo", "| a | b |", write_docs=False, report=report)
    assert "| a | b |" in capsys.readouterr().out and report.read_text() == "# Benchmarks\n"
    _report.publish("demo", "| a | b |", write_docs=True, report=report)
    assert "<!-- section:demo -->\n| a | b |\n<!-- /section:demo -->" in report.read_text()


def test_interleaved_times_repeat_a_fast_step_within_each_sample():
    """Each step runs once per round, or, given ``min_seconds``, as often as fills it (a no-op
    takes well under a microsecond, so a millisecond means many calls per sample)."""
    from benchmarks import _report

    calls = {"a": 0, "b": 0}

    def counting(name):
        def step():
            calls[name] += 1
        return step

    steps = {name: counting(name) for name in calls}
    times = _report.interleaved_times(steps, repeats=3)
    assert calls == {"a": 3, "b": 3} and all(len(t) == 3 for t in times.values())
    calls.update(a=0, b=0)
    times = _report.interleaved_times(steps, repeats=3, min_seconds=1e-3)
    assert all(count > 3 * 10 for count in calls.values())
    assert all(len(t) == 3 and all(s >= 0 for s in t) for t in times.values())


def test_the_training_guide_quotes_the_readme_run_as_printed():
    """docs/training.md states the main job's linear-probe and kNN accuracies (in that order)
    and its negative-similarity variance: the same figures as the README's printed output."""
    readme = _section(ROOT / "README.md", "## Main job")
    linear = float(re.search(r"linear probe\s+top-1\s+([\d.]+) %", readme).group(1))
    knn = float(re.search(r"kNN \(k=\d+\)\s+top-1\s+([\d.]+) %", readme).group(1))
    variance = re.search(r"augmented pairs: variance ([\d.]+)", readme).group(1)
    guide = " ".join((ROOT / "docs" / "training.md").read_text().split())
    assert f"({linear:.1f} % and {knn:.1f} % in the README's run" in guide
    assert f"variance is {variance} with VRNS" in guide


MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(document: Path) -> set[str]:
    """The anchors of a markdown file as GitHub makes them: each heading's slug (lower case,
    punctuation dropped, spaces to hyphens; a repeated slug numbered -1, -2, ...) and each
    explicit ``<a id="...">``."""
    found, seen = set(), {}
    text = re.sub(r"```.*?```", "", document.read_text(), flags=re.S)
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return found | set(re.findall(r'<a id="([^"]+)"', text))


@pytest.mark.parametrize("document", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_its_file_and_anchor(document):
    broken = []
    text = re.sub(r"```.*?```", "", document.read_text(), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        if not linked.exists():
            broken.append(f"{target}: no file {path}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading or anchor #{anchor} in {linked.name}")
    assert not broken, "\n".join(broken)


def test_the_gpu_training_benchmark_runs_its_code_path_on_the_cpu(tmp_path, capsys):
    """``benchmarks.gpu_train --quick`` on the CPU: the same code as on a GPU, tiny sizes; it
    writes its table and raw numbers (the timings themselves are not checked)."""
    import json

    from benchmarks import gpu_train

    gpu_train.main(["--device", "cpu", "--quick", "--out", str(tmp_path)])
    rows = json.loads((tmp_path / "gpu_train.json").read_text())
    assert [(row["backbone"], row["batch_size"]) for row in rows] == [("small_cnn", 16)]
    assert all(row["ratio"] > 0 for row in rows)
    table = (tmp_path / "gpu_train.md").read_text()
    assert "| small_cnn | 16 | auto |" in table and table in capsys.readouterr().out
