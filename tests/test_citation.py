"""CITATION.cff: valid YAML in the Citation File Format, citing the project and the four papers
the library implements, with the version the package declares."""

from pathlib import Path

import yaml

from contrastkit import __version__

ROOT = Path(__file__).resolve().parent.parent
PAPERS = {
    "On the Similarities of Embeddings in Contrastive Learning": "arXiv:2506.09781",
    "Large-Margin Contrastive Learning with Distance Polarization Regularizer": None,
    "Analysis of Using Sigmoid Loss for Contrastive Learning": "arXiv:2402.12613",
    "Hard-Negative Sampling for Contrastive Learning: Optimal Representation Geometry and "
    "Neural- vs Dimensional-Collapse": "arXiv:2311.05139",
}


def test_citation_file_cites_the_project_and_the_four_papers():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["version"] == __version__
    assert citation["title"].startswith("contrastkit") and citation["authors"]
    cited = {reference["title"]: reference for reference in citation["references"]}
    assert set(cited) == set(PAPERS)
    for title, arxiv in PAPERS.items():
        reference = cited[title]
        assert reference["authors"] and isinstance(reference["year"], int)
        ids = [identifier["value"] for identifier in reference.get("identifiers", [])]
        assert ids == ([arxiv] if arxiv else [])


def test_contributing_points_at_files_that_exist():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    for path in ("docs/architecture.md", "docs/losses.md", "docs/reproduction.md",
                 "CITATION.cff", ".ci/run", ".ci/wheel_check.sh", ".github/workflows/release.yml",
                 "benchmarks/gpu_check.sh",
                 "tests/test_layers.py", "tests/experiments/test_committed_evidence.py",
                 "tests/test_docs_provenance.py", "src/contrastkit/experiments/recipes/"):
        assert path in text and (ROOT / path).exists(), path
