"""An exact tensor layer that stands in for ``torch``: PyTorch samplers checked unchanged.

A sampler written in PyTorch (``import torch``, tensors, in-place ops, masks, ``torch.rand``,
``torch.multinomial``) runs under exactspec with its body unedited: while exactspec imports and
runs the file, ``torch`` resolves to this layer (:mod:`.module`), whose tensors
(:mod:`.tensor`) hold exact rationals in the exact run and values of a float format under
``--arith`` (rounded by :mod:`exactspec.engine.floats`), and whose random constructors branch
through the engine's sampler (:mod:`.random`).  ``exactspec verify FILE:fn --p P --q Q`` runs a
function ``fn(p, q)`` of such a file as a PyTorch rule (:mod:`.rule`).  Real torch is not
needed.

>>> with installed() as torch:
...     p = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
...     q = torch.tensor([0.25, 0.25, 0.5], dtype=torch.float64)
...     residual = torch.clamp(p - q, min=0)
...     (residual / residual.sum()).tolist()
[Fraction(1, 1), Fraction(0, 1), Fraction(0, 1)]
"""

from .module import installed, make_module
from .rule import PyTorchRule, imports_torch, load_pytorch_rule
from .tensor import Tensor

__all__ = ["installed", "make_module", "PyTorchRule", "imports_torch", "load_pytorch_rule",
           "Tensor"]
