"""The launch in progress: the kernel, the grid, this program's id, the options, and which
program stored and loaded each address (read by the language's modules, gathered in
:mod:`.language`, and by :mod:`.launch`).

>>> launch_option("enable_fp_fusion", True)
True
"""

from __future__ import annotations

from .errors import refuse

__all__ = ["Launch", "LAUNCHES", "interpreter_arithmetic", "launch", "launch_option"]


class Launch:
    """A launch in progress: the kernel's name, the grid (three sizes), this program's id,
    the launch options, and the addresses stored and loaded so far."""

    def __init__(self, name: str, grid: tuple, options: dict):
        self.name, self.grid, self.options = name, grid, options
        self.pid = (0, 0, 0)
        self.writes: dict = {}          # (id(storage), offset) -> program id
        self.reads: dict = {}           # (id(storage), offset) -> set of program ids
        self.keep: list = []            # the storages named by id


#: the launches in progress, innermost last (at most one: a kernel never launches another)
LAUNCHES: list = []


def launch() -> Launch:
    """The launch in progress (refused outside one)."""
    if not LAUNCHES:
        raise refuse("a Triton program function (tl.program_id, tl.load, ...) outside a "
                     "kernel launch: launch the kernel as kernel[grid](...)")
    return LAUNCHES[-1]


def launch_option(name: str, default):
    """The launch option ``name`` of the launch in progress (``default`` outside one)."""
    return LAUNCHES[-1].options.get(name, default) if LAUNCHES else default


def interpreter_arithmetic() -> bool:
    """Whether the float run declares NumPy's arithmetic (``--elementwise numpy``,
    ``split_bias(..., elementwise="numpy")``): the kernel as Triton's interpreter
    (``TRITON_INTERPRET=1``) computes it, ``/`` of ``float32`` values IEEE's correctly rounded
    quotient, ``a * b + c`` two roundings (no compiler contracts it) and ``tl.exp``/``tl.log``
    NumPy's, instead of the GPU's approximate ``div.full.f32``, ``ex2.approx`` and
    ``lg2.approx`` and the compiler's fused multiply-add, which are refused otherwise."""
    from ..torch_layer.context import current

    return getattr(current().sampler, "elementwise", "correct") == "numpy"
