"""Tools to test a contrastive loss, yours or the library's.

:func:`check_loss` checks that a loss computes the same thing in every way a training run may
call it: in 2 and 4 processes (gloo, CPU) against one process on the whole batch, values and
input gradients; its gradient against finite differences (``torch.autograd.gradcheck``);
chunked against unchunked; on a batch of one, a NaN and bfloat16 inputs. ``contrastkit
check-loss module:callable`` runs it from the command line::

    from contrastkit.testing import check_loss

    result = check_loss("simclr", world_sizes=(2,))   # prints a PASS/FAIL line per property
    assert result.passed
"""

from .check import LossCheck, PropertyResult, check_loss

__all__ = ["LossCheck", "PropertyResult", "check_loss"]
