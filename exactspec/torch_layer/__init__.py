"""An exact tensor layer that stands in for ``torch``: PyTorch samplers checked unchanged.

A sampler written in PyTorch (``import torch``, tensors, in-place ops, masks, ``torch.rand``,
``torch.multinomial``) runs under exactspec with its body unedited: while exactspec imports and
runs the file, ``torch`` resolves to this layer (:mod:`.module`), whose tensors
(:mod:`.tensor`) hold exact rationals in the exact run and values of a float format under
``--arith`` (rounded by :mod:`exactspec.engine.floats`), and whose random constructors branch
through the engine's sampler (:mod:`.random`).  ``exactspec verify FILE:fn --p P --q Q`` runs a
function ``fn(p, q)`` of such a file as a PyTorch rule (:mod:`.rule`); its draft
``torch.multinomial(q, 1)`` is enumerated as a tensor axis where the rule's control flow does
not depend on it (:mod:`.branched`), else token by token.  Real torch is not needed.  The layer is loaded only when a rule file imports torch (:func:`load_pytorch_rule`).
:func:`load` takes a function or class of an installed engine from its source, unedited,
without importing the engine (:mod:`.shipped`).

>>> from exactspec.torch_layer import installed
>>> with installed() as torch:
...     p = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
...     q = torch.tensor([0.25, 0.25, 0.5], dtype=torch.float64)
...     residual = torch.clamp(p - q, min=0)
...     (residual / residual.sum()).tolist()
[Fraction(1, 1), Fraction(0, 1), Fraction(0, 1)]
"""

from __future__ import annotations

from pathlib import Path

from .detect import imports_torch

__all__ = ["installed", "make_module", "PyTorchRule", "imports_torch", "load_pytorch_rule",
           "Tensor", "load"]

_LAZY = {"installed": "module", "make_module": "module", "PyTorchRule": "rule",
         "Tensor": "tensor", "load": "shipped"}


def load_pytorch_rule(spec: str):
    """The :class:`~.rule.PyTorchRule` named by ``file.py:function`` when the file imports
    torch and the function takes ``(p, q)``; ``None`` otherwise (a sampler rule)."""
    where, _, name = spec.rpartition(":")
    if not where or not name or not where.endswith(".py") or not Path(where).is_file() or \
            not imports_torch(where):
        return None
    from .rule import load_pytorch_rule as load

    return load(spec)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
