"""A Triton layer: ``@triton.jit`` kernels run unchanged in Python over the exact tensor layer.

While exactspec imports and runs a PyTorch rule file, ``import triton`` and ``import
triton.language as tl`` resolve to this layer (:mod:`.module`, installed beside the tensor
layer's ``torch`` by :func:`exactspec.torch_layer.module.installed`), so that a rule that
launches Triton kernels on its tensors is proved as it is written.  The real triton is never
imported.

What is modelled (:mod:`.launch`, :mod:`.language`):

- ``kernel[grid](...)`` with a grid tuple or a callable of the meta-parameters: each program
  id run in turn; ``tl.program_id``, ``tl.num_programs``, ``tl.constexpr`` parameters,
  ``@triton.autotune`` (its first configuration only), ``@triton.heuristics``,
  ``triton.cdiv``, ``triton.next_power_of_2``, ``@triton.jit`` helpers called from a kernel;
- blocks over the tensor layer's elements (exact rationals, the engine's random values,
  ``FloatValue``s under ``--arith``): ``tl.arange``, ``tl.zeros``/``tl.full``, pointer
  arithmetic, ``tl.load``/``tl.store`` with ``mask=`` and ``other=``, ``tl.where``,
  arithmetic and comparisons with Triton's promotion, ``.to(dtype)``, ``tl.sum``/``tl.max``/
  ``tl.min``/``tl.argmax``/``tl.argmin`` (the smallest index among equal extremes),
  ``tl.cumsum``, ``tl.minimum``/``tl.maximum``, ``tl.div_rn``, ``tl.static_range`` and Python
  loops, ``tl.rand`` (the engine's uniforms, one per distinct seed and offset),
  ``tl.exp``/``tl.log`` in the exact run.

What is refused, in one line naming the kernel and the line: an unmasked out-of-bounds load
or store, a load of memory nothing wrote, two programs storing one address (or one loading
what another stores), an integer overflow, a NaN in a reduction, ``tl.randn``; under
``--arith``: ``/`` of ``float32`` values (the GPU's ``div.full.f32``), a fusable
``a * b + c``, a long float sum without a declared order, ``tl.rand``, ``tl.exp``/``tl.log``;
atomics, block pointers and every name the layer does not define.  A float run that declares
NumPy's arithmetic (``--elementwise numpy``) checks the kernel as Triton's interpreter
(``TRITON_INTERPRET=1``) computes it instead: ``/`` correctly rounded, ``a * b + c`` never
fused, ``tl.exp``/``tl.log`` NumPy's (:func:`~exactspec.triton_layer.state.interpreter_arithmetic`).
"""

from __future__ import annotations

__all__ = ["triton_modules", "JITFunction", "MAX_PROGRAMS"]

_LAZY = {"triton_modules": "module", "JITFunction": "launch", "MAX_PROGRAMS": "launch"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
