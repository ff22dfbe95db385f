"""Each loss's argument list and documentation are written once (issue 28): the public function
of the views (``vrns``) is built from its twin on a :class:`SharedViews` (``vrns_shared``) by
:func:`contrastkit.losses.views.public_form`, which gives it the twin's argument list; its
docstring is the only full one. Its signature and ``help()`` are as they were written before."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import pydoc

import pytest
import torch

from contrastkit import losses
from contrastkit.losses import infonce_family
from contrastkit.losses.views import SharedViews, public_form

OPTIONS = "*, chunk_size: 'int | None' = None, distributed: 'bool' = False"
VIEWS = "u: 'torch.Tensor', v: 'torch.Tensor'"
# the public function's own argument (into the SharedViews), first among the keyword-only ones
NEGATIVES = "*, negatives: 'torch.Tensor | None' = None, "


def _temperature(default: float) -> str:
    return f"({VIEWS}, temperature: 'Setting' = {default}, normalize: 'bool' = True, {OPTIONS})"


# the signatures as the public functions spelled them out before they were built from their twins
# (info_nce and siglip with the explicit negatives and InfoNCE's direction of issue 37 since)
SIGNATURES = {
    "vrns": f"({VIEWS}, n: 'int', within_view: 'bool' = False, normalize: 'bool' = True, "
            f"{OPTIONS})",
    "siglip": f"({VIEWS}, scale: 'Setting' = 10.0, bias: 'Setting' = -10.0, "
              f"normalize: 'bool' = True, {NEGATIVES}{OPTIONS[3:]})",
    "spectral": f"({VIEWS}, normalize: 'bool' = True)",
    "polarization": f"({VIEWS}, delta_plus: 'float' = 0.1, delta_minus: 'float' = 0.5, "
                    "reduction: 'str' = 'mean', views: 'str' = 'within', "
                    "normalize: 'bool' = True)",
    "supcon": "(u: 'torch.Tensor', v: 'torch.Tensor | None', labels: 'torch.Tensor', "
              "temperature: 'Setting' = 0.1, normalize: 'bool' = True, "
              f"no_positive: 'str' = 'exclude', {OPTIONS})",
    "hcl": f"({VIEWS}, temperature: 'Setting' = 0.5, beta: 'float' = 1.0, "
           "tau_plus: 'float' = 0.1, normalize: 'bool' = True, detach_weights: 'bool' = False)",
    "info_nce": f"({VIEWS}, temperature: 'Setting' = 0.1, normalize: 'bool' = True, "
                f"{NEGATIVES}direction: 'str' = 'symmetric', {OPTIONS[3:]})",
    "simclr": _temperature(0.2),
    "dcl": _temperature(0.1),
    "dhel": _temperature(0.1),
    "exp_family_loss": f"({VIEWS}, temperature: 'Setting', *, cross_view: 'bool', "
                       "within_view: 'bool', include_positive: 'bool', normalize: 'bool' = True, "
                       "chunk_size: 'int | None' = None, distributed: 'bool' = False)",
}
RETURNS = " -> 'torch.Tensor'"


def _twin(name: str):
    """The public function ``name`` and its twin on shared views."""
    if name in ("info_nce", "simclr", "dcl", "dhel"):
        public = getattr(losses, name)
        return public, public.on_shared_views
    if name == "exp_family_loss":
        return infonce_family.exp_family_loss, infonce_family.exp_family_shared
    package = "contrastkit.losses.hard_negative" if name == "hcl" else "contrastkit.losses"
    module = importlib.import_module(f"{package}.{name}")
    return getattr(module, name), getattr(module, f"{name}_shared")


@pytest.mark.parametrize("name", SIGNATURES)
def test_the_public_signature_is_as_written_before(name):
    public, _ = _twin(name)
    assert str(inspect.signature(public)) == SIGNATURES[name] + RETURNS
    assert public.__name__ == name


@pytest.mark.parametrize("name", SIGNATURES)
def test_the_argument_list_is_the_twins(name):
    """Past the views, the public function's parameters are its twin's past ``shared``, but its
    own keyword-only ``negatives`` (which go into the shared views)."""
    public, twin = _twin(name)
    twin_signature = inspect.signature(twin)
    shared, *rest = twin_signature.parameters.values()
    assert shared.name == "shared"
    parameters = list(inspect.signature(public).parameters.values())
    assert [p.name for p in parameters[:2]] == ["u", "v"]
    assert [p for p in parameters[2:] if p.name != "negatives"] == rest
    own = [p for p in parameters if p.name == "negatives"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in own)
    assert bool(own) == (name in ("info_nce", "siglip"))
    assert inspect.signature(public).return_annotation == twin_signature.return_annotation
    # the written-out function takes its views and passes the rest on
    code = public.__code__
    assert code.co_varnames[:code.co_argcount] == ("u", "v")
    assert code.co_flags & inspect.CO_VARARGS and code.co_flags & inspect.CO_VARKEYWORDS


def _lines(doc: str) -> set[str]:
    return {line.strip() for line in inspect.cleandoc(doc).splitlines() if len(line.strip()) > 30}


@pytest.mark.parametrize("name", SIGNATURES)
def test_one_docstring_the_other_refers_to_it(name):
    """One of the two carries the documentation; the other's docstring is a note that names
    it, sharing no line with it and documenting no arguments."""
    public, twin = _twin(name)
    documented, note, target = public, twin, name
    if name == "exp_family_loss":  # documented on the twin, which the module docstring cites
        documented, note, target = twin, public, "exp_family_shared"
    assert documented.__doc__ and note.__doc__
    assert f":func:`{target}`" in note.__doc__
    assert "Args:" not in note.__doc__
    assert not _lines(documented.__doc__) & _lines(note.__doc__)


@pytest.mark.parametrize("name", SIGNATURES)
def test_help_shows_the_signature_and_the_docstring(name):
    public, _ = _twin(name)
    text = pydoc.render_doc(public, renderer=pydoc.plaintext)
    assert f"\n{name}{SIGNATURES[name]}{RETURNS}\n" in text
    assert f"function {name} in module {public.__module__}" in text
    first_line = inspect.cleandoc(public.__doc__).splitlines()[0]
    assert first_line in text


def test_every_twin_is_covered():
    """Each ``*_shared`` function of the losses has its public form here, but the hard-negative
    losses' private one, which takes their checked options rather than an argument list."""
    found = set()
    for info in pkgutil.walk_packages(losses.__path__, prefix="contrastkit.losses."):
        module = importlib.import_module(info.name)
        found |= {name for name, value in vars(module).items()
                  if name.endswith("_shared") and inspect.isfunction(value)
                  and value.__module__ == module.__name__}
    covered = {_twin(name)[1].__name__ for name in SIGNATURES}
    assert found - covered == {"_hard_negative_shared"}


@pytest.mark.parametrize("name", ["vrns", "siglip", "spectral", "polarization", "hcl",
                                  "info_nce", "simclr", "dcl", "dhel"])
def test_the_public_function_is_its_twin_on_the_views(name):
    public, twin = _twin(name)
    generator = torch.Generator().manual_seed(0)
    u, v = torch.randn(6, 4, generator=generator), torch.randn(6, 4, generator=generator)
    options = {"n": 50} if name == "vrns" else {}
    expected = twin(SharedViews(u, v), *options.values(), normalize=True)
    assert torch.equal(public(u, v, *options.values(), normalize=True), expected)
    assert torch.equal(public(v=v, u=u, **options), expected)
    with pytest.raises(TypeError, match="no_such_option"):
        public(u, v, no_such_option=1, **options)


def test_supcon_one_view_is_shared_views_without_v():
    generator = torch.Generator().manual_seed(0)
    u, v = torch.randn(6, 4, generator=generator), torch.randn(6, 4, generator=generator)
    labels = torch.tensor([0, 0, 1, 1, 2, 2])
    one_view = losses.supcon(u, None, labels)
    _, supcon_shared = _twin("supcon")
    assert torch.equal(one_view, supcon_shared(SharedViews(u, None), labels))
    assert torch.equal(losses.SupCon()(u, None, labels), one_view)
    assert not torch.equal(losses.supcon(u, v, labels), one_view)


def test_public_form_refuses_what_it_cannot_build():
    def not_a_twin(u, temperature=0.1):
        return u

    with pytest.raises(TypeError, match="shared"):
        public_form(not_a_twin)

    def twin(shared, temperature=0.1):
        return shared

    with pytest.raises(TypeError, match=r"\*args, \*\*kwargs"):
        @public_form(twin)
        def public(u, v, temperature=0.1):
            return twin(SharedViews(u, v), temperature)
