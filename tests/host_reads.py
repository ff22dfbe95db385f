"""Counting the reads of a tensor's value to the host: on a GPU each one waits for the device."""

from collections.abc import Callable

import torch

HOST_READS = ("__bool__", "__float__", "__int__", "__index__", "item", "tolist", "numpy")


def count_host_reads(monkeypatch, counts: Callable[[torch.Tensor], bool] = lambda tensor: True
                     ) -> list[str]:
    """Record every conversion of a tensor's value to a Python value, and ``torch.equal``'s
    (its first argument's), of the tensors for which ``counts`` is true."""
    reads = []
    for name in HOST_READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _name=name, _original=original, **kwargs):
            if counts(self):
                reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    original_equal = torch.equal

    def equal(a, b):
        if counts(a):
            reads.append("equal")
        return original_equal(a, b)

    monkeypatch.setattr(torch, "equal", equal)
    return reads
