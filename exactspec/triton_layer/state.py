"""The launch in progress: the kernel, the grid, this program's id, the options, and which
program stored and loaded each address (read by the language's modules, gathered in
:mod:`.language`, and by :mod:`.launch`).

>>> launch_option("enable_fp_fusion", True)
True
"""

from __future__ import annotations

from .errors import refuse

__all__ = ["Launch", "LAUNCHES", "UNBOUND", "interpreter_arithmetic", "launch",
           "launch_option"]


class Launch:
    """A launch in progress: the kernel's name, the grid (three sizes), this program's id,
    the launch options, and the addresses stored and loaded so far."""

    def __init__(self, name: str, grid: tuple, options: dict):
        self.name, self.grid, self.options = name, grid, options
        self.pid = (0, 0, 0)
        self.writes: dict = {}          # (id(storage), offset) -> program id
        self.reads: dict = {}           # id(storage) -> {offset: readers}, see read_by
        self.keep: list = []            # the storages named by id

    def read_by(self, storage_id: int, offset: int) -> None:
        """Note that this program loads element ``offset`` of the storage ``storage_id``: its
        readers are one program id (a tuple), or a set of them once two programs read it."""
        seen = self.reads.get(storage_id)
        if seen is None:
            seen = self.reads[storage_id] = {}
        was = seen.get(offset)
        if was is None:
            seen[offset] = self.pid
        elif type(was) is set:
            was.add(self.pid)
        elif was != self.pid:
            seen[offset] = {was, self.pid}

    def readers(self, storage_id: int, offset: int) -> list:
        """The programs other than this one that have loaded element ``offset``."""
        was = self.reads.get(storage_id, {}).get(offset)
        if was is None:
            return []
        if type(was) is set:
            return [r for r in was if r != self.pid]
        return [] if was == self.pid else [was]


class _Unbound:
    """A name a kernel's ``if`` may assign that was not bound before it (:mod:`.branches`)."""

    __slots__ = ()

    def __repr__(self):
        return "<unbound>"


#: the value standing for a name not bound
UNBOUND = _Unbound()

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
