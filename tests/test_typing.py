"""The typed public API (CONTRIBUTING.md, "Types"): the package ships ``py.typed``; every public
function and class of the public modules is fully annotated; mypy, configured in
pyproject.toml, passes over ``src/`` with the public modules at the strict level and the
others at the stated looser one.

The fast tests read the code (``inspect``, ``ast``, pyproject.toml), so that a new public
function without annotations, a public module missing from mypy's strict list or a lazily
exported name a type checker cannot see fails in the fast suite. Running mypy (about a minute
on 2 cores with an empty cache) is marked slow: CI runs it in ``pytest -m slow``. Without mypy
(the ``dev`` extra) those tests skip, except under CI, where a skip would hide a missing
install.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs_site import PUBLIC_MODULES

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "contrastkit"
MYPY = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
#: The packages whose names are imported on first use (contrastkit.lazy_exports).
LAZY_PACKAGES = ("contrastkit.train", "contrastkit.experiments")


def public_objects() -> list[tuple[str, object]]:
    """``(module.name, object)`` of every function and class in a public module's ``__all__``."""
    found = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value) or inspect.isclass(value):
                found.append((f"{module_name}.{name}", value))
    return found


def missing_annotations(function: object, skip_first: bool) -> list[str]:
    """The parameters of ``function`` without an annotation, and ``return`` if it has none
    (``skip_first``: a method's ``self`` or ``cls``)."""
    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())[1 if skip_first else 0:]
    missing = [p.name for p in parameters if p.annotation is inspect.Parameter.empty]
    if signature.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def own_methods(cls: type) -> dict[str, object]:
    """The methods ``cls`` defines itself (not inherited from torch or the standard library,
    nor added by ``typing.Protocol``): ``__init__``, ``__call__`` and every public one;
    static and class methods unwrapped."""
    methods = {}
    for name, value in vars(cls).items():
        if name.startswith("_") and name not in ("__init__", "__call__"):
            continue
        function = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        own = inspect.isfunction(function) and function.__qualname__.startswith(
            f"{cls.__qualname__}.")
        if own:
            methods[name] = (function, not isinstance(value, staticmethod))
    return methods


def unannotated(objects: list[tuple[str, object]]) -> dict[str, list[str]]:
    """``{"module.name[.method]": [what lacks an annotation]}`` for ``objects``."""
    found = {}
    for path, value in objects:
        if inspect.isfunction(value):
            checks = {path: (value, False)}
        else:
            checks = {f"{path}.{name}": method for name, method in own_methods(value).items()}
        for where, (function, is_method) in checks.items():
            if missing := missing_annotations(function, skip_first=is_method):
                found[where] = missing
    return found


def test_every_public_function_and_class_is_fully_annotated():
    objects = public_objects()
    assert len(objects) > 200  # the public API, not an empty list
    assert unannotated(objects) == {}


def test_the_annotation_check_names_what_a_public_function_lacks():
    def public(u, v: int = 1, *args: int, **kwargs):
        return u

    class Public:
        def __init__(self, size: int):
            self.size = size

        def method(self, x: int) -> int:
            return x

        def _private(self, x):
            return x

    assert unannotated([("m.public", public), ("m.Public", Public)]) == {
        "m.public": ["u", "kwargs", "return"], "m.Public.__init__": ["return"]}


def strict_modules() -> list[str]:
    """The modules of pyproject.toml's mypy override with ``disallow_untyped_defs``."""
    (strict,) = [override for override in MYPY["overrides"]
                 if override.get("disallow_untyped_defs")]
    assert strict.get("disallow_incomplete_defs") is True
    return strict["module"]


def defining_modules() -> set[str]:
    """The public modules and every module that defines a name of their ``__all__``: where
    mypy's strict level must apply."""
    modules = set(PUBLIC_MODULES)
    for _, value in public_objects():
        modules.add(value.__module__)
    return modules


def test_mypy_checks_every_public_module_at_the_strict_level():
    strict = strict_modules()
    assert sorted(defining_modules() - set(strict)) == []
    assert [name for name in strict if importlib.util.find_spec(name) is None] == []
    assert MYPY["check_untyped_defs"] is True  # the stated level of every other module
    assert MYPY["files"] == ["src"]


def test_missing_imports_are_ignored_only_for_named_third_party_packages():
    (ignored,) = [override for override in MYPY["overrides"]
                  if override.get("ignore_missing_imports")]
    assert "ignore_missing_imports" not in MYPY  # never globally
    assert all(not name.startswith("contrastkit") and name.endswith(".*")
               for name in ignored["module"])


def type_checking_imports(package: str) -> dict[str, str]:
    """``{name: submodule}`` of the ``if TYPE_CHECKING:`` imports of ``package``."""
    path = PACKAGE / package.removeprefix("contrastkit.").replace(".", "/") / "__init__.py"
    imports = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.level == 1
                imports.update({alias.name: statement.module for alias in statement.names})
    return imports


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_a_type_checker_sees_every_lazily_exported_name(package):
    """Names imported on first use (PEP 562 ``__getattr__``) are invisible to a type checker
    but for the package's ``if TYPE_CHECKING:`` imports, which must name the same modules."""
    assert type_checking_imports(package) == importlib.import_module(package)._EXPORTS


def test_the_package_ships_its_py_typed_marker():
    assert (PACKAGE / "py.typed").is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    assert "py.typed" in package_data["contrastkit"]


# -- mypy itself (slow) -------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_mypy(tmp_path_factory):
    """``run_mypy(*arguments)``: mypy with pyproject.toml's configuration from the repository
    root, one cache for the module's runs (the second is incremental); its output."""
    if importlib.util.find_spec("mypy") is None:
        message = "mypy is not installed (the dev extra: pip install -e '.[dev]')"
        if os.environ.get("CI"):
            pytest.fail(f"CI installs the dev extra, yet {message}")
        pytest.skip(message)
    cache = tmp_path_factory.mktemp("mypy-cache")

    def run(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache),
                               "--no-color-output", *arguments], cwd=ROOT,
                              capture_output=True, text=True, timeout=900)

    return run


@pytest.mark.slow
def test_mypy_passes_over_the_source(run_mypy):
    result = run_mypy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("Success: no issues found")


#: Code appended to a module for the planted-error test: an unannotated function and a
#: wrong annotation.
UNANNOTATED = "\n\ndef planted_unannotated(x):\n    return x\n"
WRONG = "\n\ndef planted_wrong() -> int:\n    return 'not an int'\n"


@pytest.mark.slow
def test_mypy_fails_on_a_planted_error_and_keeps_the_internal_level(run_mypy, tmp_path):
    """The check can fail: an unannotated function in a public module (losses/vrns.py) and a
    wrong annotation (geometry/alignment.py) are errors, while an unannotated function in an
    internal module (commands/demo.py) is allowed at its level. The files stay as they are:
    mypy reads the planted copies in their place (``--shadow-file``)."""
    planted = {"losses/vrns.py": UNANNOTATED, "geometry/alignment.py": WRONG,
               "commands/demo.py": UNANNOTATED}
    arguments = []
    for relative, code in planted.items():
        source = PACKAGE / relative
        copy = tmp_path / relative.replace("/", "-")
        copy.write_text(source.read_text() + code)
        arguments += ["--shadow-file", str(source), str(copy)]
    result = run_mypy(*arguments)
    assert result.returncode == 1, result.stdout + result.stderr
    errors = sorted(re.findall(r"^src/contrastkit/(\S+?):\d+: error: .*\[([\w-]+)\]$",
                               result.stdout, re.M))
    assert errors == [("geometry/alignment.py", "return-value"),
                      ("losses/vrns.py", "no-untyped-def")], result.stdout
