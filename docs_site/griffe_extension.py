"""The griffe extension that lets mkdocstrings render contrastkit's docstrings (``mkdocs.yml``).

contrastkit's docstrings are written for Sphinx: reST roles (``:func:`name```), literal blocks
after ``::``, ``.. math::`` blocks, ``Example:`` sections and Google ``Args:`` entries that name
two parameters at once (``u, v: ...``). mkdocstrings reads Markdown, so this extension, once the
package is loaded:

- adds the names a package hands on lazily (``contrastkit.lazy_exports``: its ``_EXPORTS``) as
  aliases of their definitions, with the package's ``__all__`` as read at run time, which griffe
  cannot evaluate from the source (``sorted([*_EXPORTS, ...])``);
- takes a public function whose source does not show its signature (one a call builds,
  ``info_nce = _member(...)``, or whose ``__signature__`` a decorator sets, ``@public_form``)
  from the running module;
- rewrites every docstring into Markdown (:func:`markdown_docstring`), each role a
  cross-reference to the object it names, and warns of a role that names nothing (a broken
  reference: ``mkdocs build --strict`` fails on it);
- warns of a name in a public module's ``__all__`` that has no docstring (an undocumented public
  name fails the strict build too).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import griffe

#: What a resolver returns for a name of another package (``torch.load``): shown, not linked.
EXTERNAL = ""
ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|attr|data|exc|obj|const|math):`([^`]+)`")
EXPLICIT_TITLE = re.compile(r"(.+?)\s*<([^<>]+)>")
DIRECTIVE = re.compile(r"^(\s*)\.\. (math|code-block|code)::\s*(\S*)\s*$")
PARAMETER_SECTION = re.compile(
    r"^(\s*)(Args|Arguments|Params|Parameters|Keyword Args|Keyword Arguments|"
    r"Other Parameters):\s*$")
GROUPED_ITEM = re.compile(r"^(\s*)(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)+)(\s*\([^)]*\))?:(\s.*|)$")
SINGULAR_EXAMPLE = re.compile(r"^(\s*)Example:\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block_end(lines: list[str], start: int) -> int:
    """The end (exclusive) of the lines indented under ``lines[start]``, blank lines inside
    included, trailing blank lines left out."""
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or
                                _indent(lines[end]) > _indent(lines[start])):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def _code_language(code: str) -> str:
    """``python`` for a block that parses as Python, else ``text`` (a file's lines, a table)."""
    try:
        ast.parse(code)
    except SyntaxError:
        return "text"
    return "python"


def fence_blocks(lines: list[str]) -> list[str]:
    """reST literal blocks (a paragraph ending in ``::``) and ``.. math::`` or ``.. code::``
    directives, as fenced Markdown code blocks at the paragraph's indentation; ``Text::`` becomes
    ``Text:``, and ``Text ::`` or a lone ``::`` drop the colons (reST's rules)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = DIRECTIVE.match(line)
        literal = directive is None and line.rstrip().endswith("::")
        end = _block_end(lines, i) if directive or literal else i + 1
        block = textwrap.dedent("\n".join(lines[i + 1:end])).strip("\n")
        if not block:
            out.append(line)
            i += 1
            continue
        margin = line[:_indent(line)]
        if directive:
            kind, argument = directive.group(2), directive.group(3)
            language = "tex" if kind == "math" else argument or _code_language(block)
        else:
            head = line.rstrip()[:-2]
            head = head.rstrip() if not head.strip() or head.endswith(" ") else head + ":"
            if head.strip():
                out += [head, ""]
            language = _code_language(block)
        out += [f"{margin}```{language}",
                *(f"{margin}{row}" if row else "" for row in block.splitlines()),
                f"{margin}```"]
        i = end
    return out


def split_grouped_parameters(lines: list[str]) -> list[str]:
    """A Google ``Args:`` entry naming several parameters (``u, v: the two views``) as one entry
    per parameter, each with the shared description, so that each row gets its annotation."""
    out: list[str] = []
    section: int | None = None  # the indentation of the current parameter section's header
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() and section is not None and _indent(line) <= section:
            section = None
        header = PARAMETER_SECTION.match(line)
        if header:
            section = len(header.group(1))
        grouped = GROUPED_ITEM.match(line) if section is not None and not header else None
        if grouped is None:
            out.append(line)
            i += 1
            continue
        end = _block_end(lines, i)
        margin, names, annotation, description = grouped.groups()
        for name in re.split(r"\s*,\s*", names):
            out += [f"{margin}{name}{annotation or ''}:{description}", *lines[i + 1:end]]
        i = end
    return out


def rewrite_roles(text: str, resolve: Callable[[str], str | None]) -> tuple[str, list[str]]:
    """Each reST role as Markdown: ``:math:`x``` as code, ``:func:`~a.b``` as a cross-reference
    to the object ``resolve("a.b")`` names (shown as ``b``; ``resolve`` returns its identifier,
    :data:`EXTERNAL` for another package's name, or ``None`` for a name that names nothing).
    Returns the text and the targets that named nothing. Fenced code is left alone."""
    unresolved: list[str] = []

    def replace(match: re.Match) -> str:
        role, content = match.group(1), " ".join(match.group(2).split())
        if role == "math":
            return f"`{content}`"
        explicit = EXPLICIT_TITLE.fullmatch(content)
        title, target = explicit.groups() if explicit else (None, content)
        target = "".join(target.split()).lstrip("~")  # a name broken over two lines
        if title is None:
            title = target.lstrip(".")
            title = title.split(".")[-1] if content.startswith("~") else title
        identifier = resolve(target)
        if identifier is None:
            unresolved.append(target)
        if not identifier:
            return f"`{title}`"
        return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'

    parts = re.split(r"(^\s*```.*?^\s*```[^\n]*$)", text, flags=re.S | re.M)
    rewritten = "".join(part if index % 2 else ROLE.sub(replace, part)
                        for index, part in enumerate(parts))
    return rewritten, unresolved


def markdown_docstring(text: str, resolve: Callable[[str], str | None]
                       ) -> tuple[str, list[str]]:
    """A reST-flavoured Google docstring as the Markdown Google docstring mkdocstrings renders,
    and the role targets that named nothing (see :func:`rewrite_roles`)."""
    lines = [SINGULAR_EXAMPLE.sub(r"\1Examples:", line) for line in text.splitlines()]
    lines = split_grouped_parameters(fence_blocks(lines))
    return rewrite_roles("\n".join(lines), resolve)


def _objects(obj: griffe.Object) -> Iterator[griffe.Object]:
    """``obj`` and everything defined in it (aliases left out: their targets are visited where
    they are defined)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


def resolver(obj: griffe.Object) -> Callable[[str], str | None]:
    """How a role in ``obj``'s docstring is resolved, as Sphinx would: a name is looked up in
    the enclosing classes and modules, innermost first, then as a full path; a name starting with
    ``.`` relative to the enclosing packages. Returns the object's canonical path."""
    scopes = []
    scope = obj
    while scope is not None:
        if scope.is_class or scope.is_module:
            scopes.append(scope.path)
        scope = scope.parent
    collection = obj.modules_collection

    def resolve(target: str) -> str | None:
        candidates = ([scope + target for scope in scopes] if target.startswith(".") else
                      [*(f"{scope}.{target}" for scope in scopes), target])
        for path in candidates:
            try:
                found = collection[path]
            except (KeyError, ValueError, griffe.AliasResolutionError):
                continue
            try:
                return found.canonical_path
            except griffe.AliasResolutionError:
                return found.path
        top = target.lstrip(".").split(".")[0]
        if not target.startswith(".") and top not in collection and \
                importlib.util.find_spec(top) is not None:
            return EXTERNAL
        return None

    return resolve


def _add_lazy_exports(module: griffe.Module) -> None:
    """The names ``module`` hands on through ``lazy_exports`` (its ``_EXPORTS``) as aliases of
    their definitions, and its ``__all__`` as the running module has it."""
    if "_EXPORTS" not in module.members:
        return
    running = importlib.import_module(module.path)
    for name, submodule in running._EXPORTS.items():
        if name not in module.members:
            module.set_member(name, griffe.Alias(name, f"{module.path}.{submodule}.{name}",
                                                 parent=module))
    module.exports = list(running.__all__)


def _built_at_run_time(module: griffe.Module) -> list[str]:
    """The public functions of ``module`` whose source does not show their signature: a name
    bound to a function a call builds (``info_nce = _member(...)``) or a function whose
    ``__signature__`` a decorator sets (``@public_form``)."""
    candidates = [name for name, member in module.members.items()
                  if not name.startswith("_") and not member.is_alias and (
                      (member.is_attribute and isinstance(member.value, griffe.ExprCall)) or
                      (member.is_function and member.decorators))]
    if not candidates:
        return []
    running = importlib.import_module(module.path)
    built = []
    for name in candidates:
        value = getattr(running, name, None)
        if inspect.isfunction(value) and (module.members[name].is_attribute or
                                          "__signature__" in vars(value)):
            built.append(name)
    return built


def _inspect_run_time_functions(module: griffe.Module, loader: griffe.GriffeLoader) -> None:
    """Each function of :func:`_built_at_run_time` as the running module has it (its signature
    and its docstring), in place of what the source shows."""
    names = _built_at_run_time(module)
    if not names:
        return
    running = griffe.inspect(module.path, docstring_parser=loader.docstring_parser,
                             docstring_options=loader.docstring_options)
    for name in names:
        function = running.members[name]
        function.lineno = function.lineno or module.members[name].lineno
        module.set_member(name, function)


def _undocumented_exports(module: griffe.Module) -> Iterator[str]:
    """The names in a public module's ``__all__`` without a docstring."""
    if module.exports is None or any(part.startswith("_") for part in module.path.split(".")):
        return
    for name in map(str, module.exports):
        member = module.members.get(name)
        if member is None:
            yield f"{module.path}.{name} is in __all__ but is not defined there"
            continue
        try:
            target = member.final_target if member.is_alias else member
        except griffe.AliasResolutionError:
            continue  # another package's object: its docstring is that package's
        if target.docstring is None or not target.docstring.value.strip():
            yield f"{module.path}.{name} is public (in __all__) but has no docstring"


class ContrastkitDocstrings(griffe.Extension):
    """Lazy exports, Markdown docstrings with checked cross-references, and a warning for each
    undocumented public name (see the module's docstring)."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader,
                   **kwargs: Any) -> None:
        modules = [obj for obj in _objects(pkg) if obj.is_module]
        for module in modules:
            _add_lazy_exports(module)
            _inspect_run_time_functions(module, loader)
        for obj in _objects(pkg):
            if obj.docstring is None:
                continue
            text, unresolved = markdown_docstring(obj.docstring.value, resolver(obj))
            obj.docstring.value = text
            for target in unresolved:
                griffe.logger.warning(f"{obj.relative_filepath}:{obj.docstring.lineno}: "
                                      f"{obj.path}: the reference {target!r} names nothing")
        for module in modules:
            for problem in _undocumented_exports(module):
                griffe.logger.warning(problem)
