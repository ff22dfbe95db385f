"""Sphere figure labels: points at one location share one label."""

import numpy as np

from contrastkit.simulate.figures import _coinciding


def test_coinciding_points_share_one_label_and_distinct_points_keep_their_own():
    e1, e2 = np.eye(3)[0], np.eye(3)[1]
    u = np.stack([e1, e2, e1 + 1e-3])
    v = np.stack([e1, -e2, e2])
    groups = {tuple(names) for _, names in _coinciding(u, v)}
    assert groups == {("u1", "v1", "u3"), ("u2", "v3"), ("v2",)}
