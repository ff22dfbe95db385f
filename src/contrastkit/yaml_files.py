"""Reading the YAML files users write (run configs, reproduction recipes), with one error
style: a syntax error names the file and the line and column."""

from __future__ import annotations

from pathlib import Path


def read_yaml(path: str | Path, what: str) -> object:
    """The document in the YAML file ``path``; a file that does not parse is a ``ValueError``
    naming ``what`` (e.g. ``"config file runs.yaml"``) and where the error is."""
    import yaml

    try:
        return yaml.safe_load(Path(path).read_text())
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ValueError(f"{what} is not valid YAML{where}: "
                         f"{error.problem or error.context}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise ValueError(f"{what} is not valid YAML: {error}") from None
