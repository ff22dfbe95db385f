"""The Table 1 statistic: augmented positive pairs, projector output, eval mode, seeded."""

import torch

from contrastkit.data import augmentation_for, two_views
from contrastkit.evaluate import augmented_pair_stats
from contrastkit.geometry import similarity_stats
from contrastkit.models import build_encoder


def test_pair_statistics_are_seeded_subsampled_and_taken_in_eval_mode():
    torch.manual_seed(0)
    encoder = build_encoder("small_cnn", 1, (0.3,), (0.4,), projector_hidden=16,
                            projector_out=8)
    images = torch.randint(0, 256, (30, 1, 8, 8), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(1))
    augment = augmentation_for("digits", 8)
    first = augmented_pair_stats(encoder, images, augment, pairs=20, seed=3)
    assert first == augmented_pair_stats(encoder, images, augment, pairs=20, seed=3)
    assert first.positive_count == 20 and first.negative_count == 20 * 19
    assert encoder.training  # restored afterwards
    # the same computation by hand: seeded subset, two views, eval-mode projector outputs
    chosen = images[torch.randperm(30, generator=torch.Generator().manual_seed(3))[:20]]
    view1, view2 = two_views(chosen, augment, torch.Generator().manual_seed(3))
    encoder.eval()
    with torch.no_grad():
        expected = similarity_stats(encoder(view1), encoder(view2))
    assert abs(first.negative_var - expected.negative_var) < 1e-6
    assert abs(first.negative_mean - expected.negative_mean) < 1e-6
