"""A free local TCP port, for the tests that start a torch.distributed process group (the one
``contrastkit.testing`` uses for its own process groups)."""

from contrastkit.testing.processes import free_port

__all__ = ["free_port"]
