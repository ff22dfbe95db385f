"""Private kernels behind the named losses: fused similarity-matrix reductions with hand-written
backward passes, and the batch a loss sees under torch.distributed.

Every loss of the library reduces a similarity matrix ``S = scale * X Y^T`` (anchors ``X``,
candidates ``Y``) to one number per anchor row, or to a single sum, plus terms that are linear in
the positive pairs and cost ``O(B d)``. The modules:

- :mod:`.row_logsumexp`: ``lse_a = log sum_{k not excluded} exp(S_ak)``, the normalizer of the
  exp family of Def. 3.1 (InfoNCE, SimCLR, DCL, DHEL) and of SupCon;
- :mod:`.symmetric`: the same when the candidates are the anchors themselves (SimCLR, DCL, DHEL,
  SupCon on one process): three quarters of the matrix and one backward product instead of two;
  chunked, strips of the upper triangle (about half the products of the general chunked path);
- :mod:`.two_way`: the row and column log-sum-exps of one matrix, chunked or not (InfoNCE's two
  directions on one process): each entry formed once per pass instead of twice;
- :mod:`.softplus_sum`: ``sum_{a,k} softplus(S_ak + bias)``, the sigmoid loss (SigLIP, eq. 9);
- :mod:`.common`: what they share (the ``chunk_size`` check, dtypes, row blocks, the products,
  the general chunked forward and backward)
  and :func:`positive_logits`, the ``O(B d)`` positive-pair term rounded like the matrix entries;
- :mod:`.class_sums`: the mean positive logit of supervised losses from per-class sums,
  ``O(B d)`` instead of a ``B x B`` mask;
- :mod:`.global_batch`: this process's rows as anchors, every process's rows as candidates
  (``distributed=True``).

Small matrices (at most ``common.PLAIN_AUTOGRAD_ENTRIES`` entries on the CPU,
``common.GPU_PLAIN_FACTOR`` times as many on a GPU, unchunked) take a plain-autograd path with
the same rounding (:func:`.common.plain_logits`), where a hand-written kernel's fixed cost (an
autograd Function, a host sync, a dozen small operators) would outweigh the matrix work it
saves; second derivatives work there, and the kernels refuse them. InfoNCE,
SimCLR and SigLIP take that matrix whole (:func:`.common.small_logits`) and read their positive
logits off it.

Numerics: the products run in the input dtype (or the autocast dtype when autocast is on, so a
GPU uses its bf16/fp16 tensor cores), and every reduction runs in at least float32 with
the row maximum subtracted, so temperatures like 0.01 and half-precision autocast stay finite.
The code uses only device-generic tensor operations and runs unchanged on CUDA.
"""

from .class_sums import mean_positive_logits
from .common import check_chunk_size, plain_autograd, positive_logits, small_logits
from .global_batch import GlobalBatch, global_batch, global_rows
from .row_logsumexp import row_logsumexp
from .softplus_sum import softplus_sum
from .two_way import two_way_logsumexp

__all__ = [
    "GlobalBatch",
    "check_chunk_size",
    "global_batch",
    "global_rows",
    "mean_positive_logits",
    "plain_autograd",
    "positive_logits",
    "row_logsumexp",
    "small_logits",
    "softplus_sum",
    "two_way_logsumexp",
]
