#!/usr/bin/env bash
# The release check: build the sdist and the wheel as a release does (`python -m build`: the
# wheel is built from the sdist), check both for PyPI (`twine check --strict`), install the
# wheel with the train extra into a fresh virtual environment in a temporary folder, and there,
# where the checkout cannot be imported, run
#   - the installed package: the wheel's copy, of the source's version (`contrastkit --version`);
#   - `contrastkit reproduce --list`: every recipe of the source tree (package data) is listed;
#   - the smoke test `contrastkit reproduce hardneg/thm1` (its quick tier, a few seconds);
#   - the README's main job, `contrastkit pretrain && contrastkit evaluate runs/digits-simclr-vrns`.
# Exits non-zero on any failure. Measured 6 min 39 s on 2 cores shared with other work (load
# 4.5): 164 s to build and install (mostly unpacking torch and its CUDA libraries, 5.8 GB,
# removed at the end), 232 s of runs (the main job about 1.5 min of them on idle cores).
#
#     bash .ci/wheel_check.sh [DIST]        # the sdist and the wheel are left in DIST (dist/)
#
# PYTHON (default python3) builds and makes the environment; it needs `build` and `twine`
# (the dev extra). pip installs from wherever its configuration says (PIP_* variables).
set -euo pipefail
dist=$(realpath -m "${1:-$(dirname "$0")/../dist}")
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
started=$SECONDS

fail() {
    echo "wheel check: $*" >&2
    exit 1
}

version=$(PYTHONPATH=src "$python" -c "import contrastkit; print(contrastkit.__version__)")
mkdir -p "$dist"
rm -f "$dist"/contrastkit-*.whl "$dist"/contrastkit-*.tar.gz  # an earlier build's, nothing else
"$python" -m build --quiet --outdir "$dist" .
wheel="$dist/contrastkit-$version-py3-none-any.whl" sdist="$dist/contrastkit-$version.tar.gz"
for file in "$wheel" "$sdist"; do
    [ -f "$file" ] || fail "no $file: the build made $(ls "$dist")"
done
"$python" -m twine check --strict "$sdist" "$wheel"
recipes=$(cd src/contrastkit/experiments/recipes && find . -name '*.yaml' | sed 's|^\./||; s|\.yaml$||' | sort)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
# --no-compile: byte-compiling every file of torch and its CUDA libraries costs a minute of CPU;
# what runs is compiled when first imported
"$work/venv/bin/pip" install --quiet --no-compile "${wheel}[train]"
installed=$SECONDS
echo "wheel check: built and installed contrastkit $version in $((installed - started)) s"

cd "$work"
unset PYTHONPATH
export PATH="$work/venv/bin:$PATH"
python - "$work/venv" "$version" <<'EOF'
import importlib.metadata
import sys
from pathlib import Path

import contrastkit

venv, version = Path(sys.argv[1]).resolve(), sys.argv[2]
where = Path(contrastkit.__file__).resolve()
if venv not in where.parents:
    sys.exit(f"wheel check: contrastkit was imported from {where}, not from {venv}")
found = {"contrastkit.__version__": contrastkit.__version__,
         "the installed metadata": importlib.metadata.version("contrastkit")}
if set(found.values()) != {version}:
    sys.exit(f"wheel check: the source's version is {version}; {found}")
EOF
[ "$(contrastkit --version)" = "contrastkit $version" ] ||
    fail "contrastkit --version says '$(contrastkit --version)', not 'contrastkit $version'"
listed=$(contrastkit reproduce --list | sed -n 's|^\([^ :]*/[^ :]*\): .*|\1|p' | sort)
[ "$listed" = "$recipes" ] ||
    fail "reproduce --list and the source's recipes differ: $(diff <(echo "$listed") <(echo "$recipes"))"
contrastkit reproduce hardneg/thm1
[ -s runs/reproduce/hardneg-thm1/quick/report.md ] || fail "reproduce wrote no report"
contrastkit pretrain
contrastkit evaluate runs/digits-simclr-vrns
[ -s runs/digits-simclr-vrns/eval.json ] || fail "the main job wrote no eval.json"
echo "wheel check: passed in $((SECONDS - started)) s (the runs from the wheel: $((SECONDS - installed)) s)"
