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
