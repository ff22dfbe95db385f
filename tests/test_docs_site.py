"""The documentation site (mkdocs.yml): every guide is a page, every public module has an API
page, and ``mkdocs build --strict`` passes offline with every public name documented.

The build itself (about half a minute) is marked slow: CI runs it (``pytest -m slow``, with the
``docs`` extra installed), a developer with ``pytest -m slow tests/test_docs_site.py``. It is a
test rather than a bare CI command because it also checks what the build's exit code cannot:
that the build opened no network connection, that the pages load nothing from the web, and that
every name of every public module's ``__all__`` has its entry on an API page. Without the ``docs``
extra the tests that need it skip, except under CI, where a skip would hide a missing install.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MKDOCS_YML = ROOT / "mkdocs.yml"
#: The modules the API reference documents: the README's "What is in the box".
PUBLIC_MODULES = (
    "contrastkit.losses", "contrastkit.geometry", "contrastkit.theory", "contrastkit.monitor",
    "contrastkit.simulate", "contrastkit.data", "contrastkit.models", "contrastkit.train",
    "contrastkit.train.grad_cache", "contrastkit.evaluate", "contrastkit.experiments",
    "contrastkit.integrations.lightning", "contrastkit.testing", "contrastkit.typing",
)


def needs_docs_extra(module: str) -> None:
    """Skip unless ``module`` (of the ``docs`` extra) is installed; under CI, fail instead."""
    if importlib.util.find_spec(module) is not None:
        return
    message = f"{module} is not installed (the docs extra: pip install -e '.[docs]')"
    if os.environ.get("CI"):
        pytest.fail(f"CI installs the docs extra, yet {message}")
    pytest.skip(message)


def nav_pages() -> list[str]:
    """The pages the site's navigation lists, relative to docs/."""
    nav = MKDOCS_YML.read_text().split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- .*?([\w./-]+\.md)\s*$", nav, re.M)


def test_every_guide_and_paper_page_is_in_the_navigation():
    listed = nav_pages()
    guides = [p.relative_to(DOCS).as_posix() for p in
              [*DOCS.glob("*.md"), *DOCS.glob("reproduction/*.md"), *DOCS.glob("api/*.md")]]
    assert sorted(set(guides) - set(listed)) == []
    assert [page for page in listed if not (DOCS / page).is_file()] == []


def api_directives() -> set[str]:
    """The objects the API pages render (their ``::: path`` lines)."""
    return {line.split()[1] for page in DOCS.glob("api/*.md")
            for line in page.read_text().splitlines() if line.startswith("::: ")}


def named_like_their_module(module: str) -> list[str]:
    """The paths of the public names of the package ``module`` defined in a module of their own
    name (``contrastkit.losses.vrns``, the function of ``losses/vrns.py``). griffe, which reads
    the source for mkdocstrings, keeps one member per name, the submodule, so that the package's
    page would leave the function out: the page renders it by its own path."""
    if importlib.util.find_spec(module).submodule_search_locations is None:
        return []  # a module, not a package: it has no submodules
    package = importlib.import_module(module)
    defined_in = {name: getattr(getattr(package, name), "__module__", "")
                  for name in package.__all__ if not inspect.ismodule(getattr(package, name))}
    return [f"{where}.{name}" for name, where in defined_in.items()
            if where.rpartition(".")[2] == name]


def test_every_public_module_has_an_api_page():
    assert sorted(set(PUBLIC_MODULES) - api_directives()) == []


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_a_public_function_named_like_its_module_has_its_own_directive(module):
    assert sorted(set(named_like_their_module(module)) - api_directives()) == []


def test_the_theme_loads_no_web_fonts_and_no_plugin_downloads():
    config = MKDOCS_YML.read_text()
    assert re.search(r"^\s+font: false\b", config, re.M)
    plugins = re.split(r"^\S", config.split("\nplugins:\n", 1)[1], maxsplit=1, flags=re.M)[0]
    assert re.findall(r"^  - (\w+)", plugins, re.M) == ["search", "mkdocstrings"]
    assert "inventories" not in config  # mkdocstrings would fetch other sites' objects.inv


# -- the griffe extension (docs_site/griffe_extension.py) ---------------------------------


@pytest.fixture
def extension():
    needs_docs_extra("griffe")
    from docs_site import griffe_extension

    return griffe_extension


def resolve_from(table: dict[str, str]):
    return lambda target: table.get(target)


def test_roles_become_cross_references_and_a_role_naming_nothing_is_reported(extension):
    text = ("See :func:`~contrastkit.losses.simclr`, :class:`Recipe`, :func:`torch.load`,\n"
            ":math:`\\mathcal R_1`, :func:`the loss <contrastkit.losses.vrns>` and :func:`gone`.")
    table = {"contrastkit.losses.simclr": "contrastkit.losses.infonce_family.simclr",
             "Recipe": "contrastkit.experiments.recipe.Recipe", "torch.load": extension.EXTERNAL,
             "contrastkit.losses.vrns": "contrastkit.losses.vrns.vrns"}
    out, unresolved = extension.rewrite_roles(text, resolve_from(table))
    link = '<autoref identifier="{}" optional><code>{}</code></autoref>'
    assert out == ("See " + link.format("contrastkit.losses.infonce_family.simclr", "simclr") +
                   ", " + link.format("contrastkit.experiments.recipe.Recipe", "Recipe") +
                   ", `torch.load`,\n`\\mathcal R_1`, " +
                   link.format("contrastkit.losses.vrns.vrns", "the loss") + " and `gone`.")
    assert unresolved == ["gone"]


def test_a_role_broken_over_two_lines_names_one_target_and_code_is_left_alone(extension):
    text = "Use :func:`~contrastkit.dtypes.\n    full_float32`.\n\n```python\n:func:`x`\n```"
    out, unresolved = extension.rewrite_roles(text, resolve_from({}))
    assert unresolved == ["contrastkit.dtypes.full_float32"]
    assert out.endswith("```python\n:func:`x`\n```")


def test_literal_and_math_blocks_become_fenced_code(extension):
    lines = textwrap.dedent("""\
        Plain PyTorch::

            monitor = SimilarityMonitor(n=10)

        Example ``train.tsv`` ::

            a.png\tone red square

        .. math::
            \\frac{1}{B}
        After.""").splitlines()
    assert extension.fence_blocks(lines) == [
        "Plain PyTorch:", "", "```python", "monitor = SimilarityMonitor(n=10)", "```", "",
        "Example ``train.tsv``", "", "```text", "a.png\tone red square", "```", "",
        "```tex", "\\frac{1}{B}", "```", "After."]


def test_parameters_named_together_are_one_entry_each(extension):
    lines = textwrap.dedent("""\
        Args:
            u, v: the two views,
                each (B, d).
            t: the temperature.

        Returns:
            a, b: not parameters.""").splitlines()
    assert extension.split_grouped_parameters(lines) == [
        "Args:", "    u: the two views,", "        each (B, d).",
        "    v: the two views,", "        each (B, d).", "    t: the temperature.", "",
        "Returns:", "    a, b: not parameters."]


def test_an_example_section_is_the_examples_section_griffe_reads(extension):
    text, unresolved = extension.markdown_docstring(
        "Do it.\n\nExample:\n    >>> do_it()\n    1", resolve_from({}))
    assert text == "Do it.\n\nExamples:\n    >>> do_it()\n    1" and unresolved == []


FAKE_PACKAGE = {
    "__init__.py": '''
        """A package: :func:`helper`, :func:`.sub.later` and :func:`missing_name`."""
        from contrastkit.lazy_exports import lazy_exports

        _EXPORTS = {"later": "sub"}
        __all__ = sorted([*_EXPORTS, "helper", "undocumented"])


        def helper(u, v):
            """Help."""


        def undocumented():
            pass


        __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
        ''',
    "sub.py": '''
        """A submodule."""


        def _make(doc):
            def built(x, y=1):
                return x
            built.__doc__ = doc
            return built


        later = _make("Built at run time.")
        ''',
}


def test_the_extension_reports_broken_references_and_undocumented_public_names(
        extension, tmp_path, monkeypatch, caplog):
    """On a small package: the lazily exported name is found with the signature and docstring
    it has at run time, and the strict build's failures are warned of."""
    import griffe

    package = tmp_path / "fakepkg"
    package.mkdir()
    for name, source in FAKE_PACKAGE.items():
        (package / name).write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with caplog.at_level(logging.WARNING):
            loaded = griffe.load(
                "fakepkg", search_paths=[tmp_path], docstring_parser="google",
                extensions=griffe.load_extensions(extension.ContrastkitDocstrings))
    finally:
        for name in [name for name in sys.modules if name.partition(".")[0] == "fakepkg"]:
            del sys.modules[name]
    assert loaded.exports == ["helper", "later", "undocumented"]
    later = loaded["later"].final_target
    assert later.is_function and [p.name for p in later.parameters] == ["x", "y"]
    assert later.docstring.value == "Built at run time."
    assert 'identifier="fakepkg.sub.later"' in loaded.docstring.value
    warnings = [record.getMessage() for record in caplog.records]
    assert any("the reference 'missing_name' names nothing" in w for w in warnings)
    assert any("fakepkg.undocumented is public (in __all__) but has no docstring" in w
               for w in warnings)
    assert not any("helper" in w or "later" in w for w in warnings)


# -- the site ------------------------------------------------------------------------------

#: Runs mkdocs with every network connection refused and reported.
OFFLINE_MKDOCS = """
import socket, sys

def refuse(*args, **kwargs):
    print("NETWORK ATTEMPT", args[:2], file=sys.stderr)
    raise OSError("the docs build must not use the network")

socket.socket.connect = socket.create_connection = socket.getaddrinfo = refuse
from mkdocs.__main__ import cli
cli()
"""


@pytest.mark.slow
def test_the_site_builds_strictly_offline_with_every_public_name(tmp_path):
    needs_docs_extra("mkdocs")
    needs_docs_extra("mkdocstrings")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    built = subprocess.run(
        [sys.executable, "-c", OFFLINE_MKDOCS, "build", "--strict", "--config-file",
         str(MKDOCS_YML), "--site-dir", str(site)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    log = built.stdout + built.stderr
    assert built.returncode == 0, log
    assert "NETWORK ATTEMPT" not in log

    anchors = {anchor for page in site.glob("api/*/index.html")
               for anchor in re.findall(r'\bid="(contrastkit\.[\w.]+)"', page.read_text())}
    missing = []
    for module in PUBLIC_MODULES:
        package = importlib.import_module(module)
        for name in package.__all__:
            defined_at = f"{getattr(getattr(package, name), '__module__', module)}.{name}"
            if f"{module}.{name}" not in anchors and defined_at not in anchors:
                missing.append(f"{module}.{name}")
    assert missing == [], "public names the API reference lacks"

    remote = re.compile(r"<(?:link|script)\b[^>]*\b(?:href|src)=\"(?:https?:)?//", re.I)
    loading = [str(page.relative_to(site)) for page in site.rglob("*.html")
               if remote.search(page.read_text())]
    assert loading == [], "pages that load something from the web"
