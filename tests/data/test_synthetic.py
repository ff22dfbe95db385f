import pytest
import torch

from contrastkit.data import gaussian_mixture


def test_gaussian_mixture_is_seeded_balanced_and_centered_on_its_means():
    x, y = gaussian_mixture(4000, 6, num_classes=4, separation=5.0, noise=0.5, seed=3)
    again, labels_again = gaussian_mixture(4000, 6, num_classes=4, separation=5.0, noise=0.5,
                                           seed=3)
    assert torch.equal(x, again) and torch.equal(y, labels_again)
    assert not torch.equal(x, gaussian_mixture(4000, 6, 4, 5.0, 0.5, seed=4)[0])
    assert y.bincount().tolist() == [1000] * 4
    means = torch.stack([x[y == k].mean(0) for k in range(4)])
    assert torch.allclose(means.norm(dim=1), torch.full((4,), 5.0), atol=0.1)
    spread = torch.cat([x[y == k] - means[k] for k in range(4)]).std(0)
    assert torch.allclose(spread, torch.full((6,), 0.5), atol=0.05)


@pytest.mark.parametrize("kwargs, match", [({"n": 0}, "n must"), ({"num_classes": 200}, "<= n"),
                                           ({"noise": -1.0}, "noise")])
def test_gaussian_mixture_rejects_bad_arguments(kwargs, match):
    arguments = {"n": 100, "dim": 3, "num_classes": 4, **kwargs}
    with pytest.raises(ValueError, match=match):
        gaussian_mixture(**arguments)


def test_the_uniform_mean_law_draws_means_in_the_cube_as_the_hard_negative_paper():
    # Jiang et al., Sec. 5: class means with i.i.d. U[-1, 1] components, identity covariance
    x, y = gaussian_mixture(3000, 400, num_classes=3, separation=1.0, noise=1.0, seed=2,
                            mean_law="uniform")
    means = torch.stack([x[y == k].mean(0) for k in range(3)]).double()
    # every component within [-1, 1] up to the sampling error of a mean of 1000 points
    assert means.abs().max() < 1 + 5 / 1000 ** 0.5
    # U[-1, 1] has second moment 1/3 (a sphere mean of norm 1 would give 1/400)
    assert means.square().mean().item() == pytest.approx(1 / 3, rel=0.1)
    spread = torch.cat([x[y == k] - means[k].float() for k in range(3)]).std(0)
    assert spread.mean().item() == pytest.approx(1.0, rel=0.02)


def test_an_unknown_mean_law_is_named():
    with pytest.raises(ValueError, match="mean_law"):
        gaussian_mixture(10, 2, 2, mean_law="cube")
