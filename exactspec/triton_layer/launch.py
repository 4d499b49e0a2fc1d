"""``@triton.jit`` kernels launched as ``kernel[grid](...)``, and the memory they load and store.

A launch binds the arguments to the kernel's signature, computes the grid (a tuple, or a
callable of the meta-parameters: every argument by name), and runs the kernel's Python body
unchanged once per program id, in turn (axis 0 fastest).  A tensor argument becomes a pointer
(its storage and its element offset); a non-constexpr ``int`` an ``int32`` scalar (``int64``
when it does not fit), a ``float`` a ``float32`` scalar, a ``bool`` an ``int1`` scalar; a
``tl.constexpr`` parameter stays the Python value.  ``@triton.autotune`` runs its first
configuration (its meta-parameters and ``num_warps``); ``@triton.heuristics`` computes its
values from the arguments before the launch.  Launch options (``num_warps``, ``num_stages``,
``enable_fp_fusion``, ...) change no value, except that ``enable_fp_fusion=False`` allows a
float ``a * b + c`` under ``--arith`` (:mod:`.language`).

Memory: ``tl.load(pointer, mask=, other=)`` reads every lane the mask keeps, ``tl.store``
writes them (the value cast to the pointer's element dtype).  Refused in one line naming the
kernel and the line: a lane outside its argument's storage (an unmasked out-of-bounds access),
a read of memory nothing wrote (``torch.empty`` loaded before any store), two programs of one
launch storing one address, or one program loading an address another stores (the programs of
a launch run in no defined order), two lanes of one store writing one address, and a store of
a lane a masked load left undefined.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import re
import sys

from ..core.deadline import check as check_deadline
from ..core.errors import ExactspecError, TooLarge
from ..core.signals import CannotProceed
from ..torch_layer import dtypes as D
from ..torch_layer.branched import Branched
from ..torch_layer.tensor import Tensor, read
from ..torch_layer.values import UNSET
from . import language as tl
from .operators import as_block
from .blocks import element
from .branches import branched_body
from .errors import HERE, KERNELS, ours, refuse, where
from .state import LAUNCHES as _LAUNCHES
from .state import Launch, launch, launch_option

__all__ = ["JITFunction", "jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2",
           "load", "store", "launch", "launch_option", "MAX_PROGRAMS"]

#: The most programs one launch runs (each runs the kernel's Python body).
MAX_PROGRAMS = 2 ** 16

#: launch options Triton takes beside the kernel's arguments
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug",
           "launch_pdl", "enable_warp_specialization", "num_buffers_warp_spec",
           "num_consumer_groups", "reg_dec_producer", "reg_inc_consumer", "waves_per_eu",
           "matrix_instr_nonkdim", "kpack", "grid", "warmup", "stream", "device")


class _Memory:
    """One launch argument's memory: its storage, dtype and name."""

    __slots__ = ("storage", "dtype", "name")

    def __init__(self, storage, dtype, name):
        self.storage, self.dtype, self.name = storage, dtype, name


def cdiv(x, y):
    """``triton.cdiv(x, y)``: ``ceil(x / y)`` of integers.

    >>> cdiv(10, 4), cdiv(8, 4)
    (3, 2)
    """
    return (x + y - 1) // y


def next_power_of_2(n) -> int:
    """``triton.next_power_of_2(n)``: the smallest power of 2 at least ``n`` (1 for ``n <= 1``).

    >>> next_power_of_2(5), next_power_of_2(8), next_power_of_2(0)
    (8, 8, 1)
    """
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


# -- kernels ----------------------------------------------------------------------------------

def _is_constexpr(annotation) -> bool:
    if annotation is tl.constexpr:
        return True
    return isinstance(annotation, str) and annotation.split(".")[-1] == "constexpr"


class _Launcher:
    """What ``kernel[grid]`` returns: called with the kernel's arguments, it launches."""

    __slots__ = ("kernel", "grid")

    def __init__(self, kernel, grid):
        self.kernel, self.grid = kernel, grid

    def __call__(self, *args, **kwargs):
        return self.kernel.launch(self.grid, args, kwargs)


class JITFunction:
    """A ``@triton.jit`` function: ``kernel[grid](...)`` launches it; called inside a kernel it
    is a plain call (a helper)."""

    def __init__(self, fn, options=None):
        self.fn = fn
        self.options = dict(options or {})
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn
        try:
            self.signature = inspect.signature(fn)
        except (TypeError, ValueError):
            raise refuse(f"@triton.jit of {fn!r}, which is not a Python function") from None
        self.arg_names = list(self.signature.parameters)
        self.constexprs = {n for n, p in self.signature.parameters.items()
                           if _is_constexpr(p.annotation)}
        self._body = None

    @property
    def body(self):
        """The function run for each program: ``fn`` with its ``if`` statements rewritten
        (:mod:`.branches`), made on first use."""
        if self._body is None:
            self._body = branched_body(self.fn)
        return self._body

    @property
    def jit(self) -> "JITFunction":
        return self

    def __getitem__(self, grid):
        return _Launcher(self, grid)

    def run(self, *args, grid, warmup=False, **kwargs):
        """``kernel.run(*args, grid=grid, ...)``, as an autotuner calls it."""
        return self.launch(grid, args, kwargs)

    def __call__(self, *args, **kwargs):
        if not _LAUNCHES:
            raise refuse(f"the @triton.jit function {self.__name__} called outside a kernel: "
                         f"launch it as {self.__name__}[grid](...)")
        return self.body(*args, **kwargs)

    def bind(self, args, kwargs) -> dict:
        """The arguments by name (defaults filled in); launch options left out."""
        kwargs = {k: v for k, v in kwargs.items() if k not in OPTIONS or k in self.arg_names}
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise refuse(f"launching {self.__name__}: {err}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def launch(self, grid, args, kwargs, extra_options=None):
        """Run every program of ``grid`` with the arguments ``args``, ``kwargs``."""
        if _LAUNCHES:
            raise refuse(f"{self.__name__} launched from inside kernel {_LAUNCHES[-1].name}")
        options = {**self.options, **(extra_options or {}),
                   **{k: v for k, v in kwargs.items() if k in OPTIONS and
                      k not in self.arg_names}}
        named = self.bind(args, kwargs)
        sizes = _grid(grid, named, self.__name__)
        converted = {n: self._argument(n, v) for n, v in named.items()}
        state = Launch(self.__name__, sizes, options)
        body = self.body
        _LAUNCHES.append(state)
        KERNELS.append(self.__name__)
        try:
            for z, y, x in itertools.product(*(range(n) for n in reversed(sizes))):
                state.pid = (x, y, z)
                check_deadline()
                body(**converted)
        except ExactspecError as err:
            _relocate(err, self.__name__)
            raise
        finally:
            KERNELS.pop()
            _LAUNCHES.pop()

    def _argument(self, name, value):
        if name in self.constexprs:
            return value
        if isinstance(value, Tensor):
            elem = tl.OF_TORCH.get(value.dtype)
            if elem is None:
                raise refuse(f"argument {name}: a {value.dtype.name} tensor")
            return tl.tensor(Tensor.new([value._off], (), D.int64), tl.pointer_type(elem),
                             base=_Memory(value._st, value.dtype, name))
        if isinstance(value, bool):
            return tl.scalar_block(value, tl.int1)
        if isinstance(value, int):
            return tl.scalar_block(value, tl.int32 if -2 ** 31 <= value < 2 ** 31 else tl.int64)
        if isinstance(value, float):
            return tl.scalar_block(value, tl.float32)
        if value is None or isinstance(value, (str, tl.dtype, tl.tensor)):
            return value
        raise refuse(f"argument {name} of {self.__name__}: a {type(value).__name__} (a kernel "
                     "takes tensors, numbers and constexpr values)")


def _grid(grid, named: dict, kernel: str) -> tuple:
    if callable(grid):
        grid = grid(dict(named))
    if isinstance(grid, (int, tl.tensor)):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise refuse(f"the grid of {kernel}: {grid!r} (give a tuple of 1 to 3 sizes, or a "
                     "function of the meta-parameters returning one)")
    try:
        sizes = [int(n) for n in grid]
    except (TypeError, ValueError):
        raise refuse(f"the grid of {kernel}: {grid!r} is not a tuple of integers") from None
    if any(n < 0 for n in sizes):
        raise refuse(f"the grid of {kernel}: a negative size in {tuple(sizes)}")
    sizes += [1] * (3 - len(sizes))
    total = math.prod(sizes)
    if total > MAX_PROGRAMS:
        err = TooLarge(f"the grid of {kernel} has {total:,} programs, over the Triton layer's "
                       f"budget of {MAX_PROGRAMS:,}: each runs the kernel's Python body "
                       f"({where(_line())})", estimate=total, budget=MAX_PROGRAMS)
        err.located = True
        raise err
    return tuple(sizes)


def _line() -> str:
    from .errors import user_frame_line

    return user_frame_line(sys._getframe(1))


_OWN_LINE = re.compile(r"\(([^()]*?)([A-Za-z_][\w]*\.py):(\d+)\)$")


def _relocate(err: ExactspecError, kernel: str) -> None:
    """A tensor-layer refusal raised inside a kernel names the innermost frame outside the
    tensor and Triton layers: name it as the kernel's line, with the kernel."""
    if not err.args or not isinstance(err.args[0], str):
        return
    message = err.args[0]
    m = _OWN_LINE.search(message)
    if m is None or m.group(1):
        return
    import os

    tb, line = err.__traceback__, None
    while tb is not None:
        if not ours(tb.tb_frame.f_code.co_filename):
            line = f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    if line is not None:
        err.args = (message[:m.start()] + f"(kernel {kernel}, {line})",) + err.args[1:]


# -- autotune, heuristics ------------------------------------------------------------------------

class Config:
    """``triton.Config(kwargs, num_warps=4, num_stages=3, ...)``: one configuration."""

    def __init__(self, kwargs=None, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None,
                 pre_hook=None, **options):
        self.kwargs = dict(kwargs or {})
        self.num_warps, self.num_stages, self.num_ctas = num_warps, num_stages, num_ctas
        self.maxnreg, self.pre_hook = maxnreg, pre_hook
        self.options = options

    def all_kwargs(self) -> dict:
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages}

    def __repr__(self):
        return f"Config({self.kwargs}, num_warps={self.num_warps})"


class _Wrapper:
    """A decorator's kernel over an inner one (``jit``, another wrapper)."""

    def __init__(self, inner):
        if not hasattr(inner, "launch"):
            inner = JITFunction(inner)
        self.inner = inner
        self.__name__ = inner.__name__

    @property
    def jit(self) -> JITFunction:
        return self.inner.jit

    @property
    def fn(self):
        return self.jit.fn

    @property
    def arg_names(self):
        return self.jit.arg_names

    def __getitem__(self, grid):
        return _Launcher(self, grid)

    def run(self, *args, grid, warmup=False, **kwargs):
        return self.launch(grid, args, kwargs)

    def __call__(self, *args, **kwargs):
        return self.jit(*args, **kwargs)


class Autotuner(_Wrapper):
    """``@triton.autotune(configs, key)``: the launch runs the first configuration (its
    meta-parameters and options); the others, the timing and the cache are not run."""

    def __init__(self, inner, configs, key=(), **options):
        super().__init__(inner)
        if not configs:
            raise refuse(f"@triton.autotune of {self.__name__} without configurations")
        self.configs = list(configs)
        self.key = key
        self.best_config = self.configs[0]

    def launch(self, grid, args, kwargs, extra_options=None):
        config = self.configs[0]
        clash = sorted(set(config.kwargs) & set(kwargs))
        if clash:
            raise refuse(f"{self.__name__}: {clash[0]!r} is given at the launch and by the "
                         "autotuner's configuration (Triton refuses it too)")
        if config.pre_hook is not None:
            raise refuse(f"{self.__name__}: an autotune configuration's pre_hook is not run by "
                         "exactspec's Triton layer")
        options = {"num_warps": config.num_warps, "num_stages": config.num_stages,
                   **config.options, **(extra_options or {})}
        return self.inner.launch(grid, args, {**kwargs, **config.kwargs}, options)


class Heuristics(_Wrapper):
    """``@triton.heuristics({name: f})``: ``name`` set to ``f(meta)`` before the launch."""

    def __init__(self, inner, values: dict):
        super().__init__(inner)
        self.values = dict(values)

    def launch(self, grid, args, kwargs, extra_options=None):
        meta = dict(zip(self.arg_names, args))
        meta.update(kwargs)
        added = {}
        for name, f in self.values.items():
            added[name] = f({**meta, **added})
        return self.inner.launch(grid, args, {**kwargs, **added}, extra_options)


def jit(fn=None, **options):
    """``@triton.jit`` and ``@triton.jit(...)``: a :class:`JITFunction`."""
    if fn is None:
        return lambda f: JITFunction(f, _jit_options(options))
    return JITFunction(fn, _jit_options(options))


def _jit_options(options: dict) -> dict:
    return {k: v for k, v in options.items() if k in OPTIONS}


def autotune(configs, key=(), prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, cache_results=False):
    """``@triton.autotune(configs, key)``: :class:`Autotuner` (the first configuration)."""
    return functools.partial(Autotuner, configs=configs, key=key)


def heuristics(values):
    """``@triton.heuristics(values)``: :class:`Heuristics`."""
    return lambda inner: Heuristics(inner, values)


# -- memory --------------------------------------------------------------------------------------

def _pointer(pointer, what: str) -> tl.tensor:
    if not isinstance(pointer, tl.tensor) or not pointer.dtype.is_ptr():
        kind = pointer.dtype.name if isinstance(pointer, tl.tensor) else type(pointer).__name__
        raise refuse(f"{what} of a {kind} (give a pointer: a tensor argument plus offsets)")
    return pointer


def _expand(t: Tensor, shape) -> Tensor:
    if tuple(t.shape) == tuple(shape):
        return t
    return t.expand(*shape)


def _mask_lanes(mask, shape, what: str):
    """The mask's lanes as Python bools (``None``: every lane); a mask that depends on a
    random value branches the engine here."""
    if mask is None:
        return None
    if not isinstance(mask, tl.tensor):
        return [bool(mask)] * math.prod(shape)
    mask._defined(f"{what}'s mask")
    if mask.dtype.kind != "bool":
        mask = mask != 0
    out = []
    for v in _expand(mask.t, shape)._values():
        if type(v) is bool:
            out.append(v)
        else:
            out.append(bool(Tensor.new([v], (), D.bool_)))
    return out


def _bounds(offset, mem: _Memory, what: str) -> None:
    n = len(mem.storage.data)
    values = offset.values if type(offset) is Branched else (offset,)
    for o in values:
        if type(o) is not int:
            raise CannotProceed(f"a {what} at an offset that is not a plain integer")
        if not 0 <= o < n:
            raise refuse(f"{what} out of bounds: element {o} of argument {mem.name}, which has "
                         f"{n} elements (no mask= covers the lane)")


def load(pointer, mask=None, other=None, boundary_check=(), padding_option="",
         cache_modifier="", eviction_policy="", volatile=False) -> tl.tensor:
    """``tl.load(pointer, mask=None, other=None)``: a block of the pointed elements."""
    state = launch()
    pointer = _pointer(pointer, "tl.load")
    if boundary_check or padding_option:
        raise refuse("tl.load with boundary_check/padding_option (block pointers) is outside "
                     "exactspec's Triton layer")
    mem, elem = pointer.base, pointer.dtype.element_ty
    shape = tuple(pointer.t.shape)
    offsets = pointer.t._values()
    lanes = _mask_lanes(mask, shape, "tl.load")
    others = None
    if other is not None and lanes is not None:
        ob = as_block(other, elem)
        ob._defined("tl.load's other")
        others = _expand(ob.t, shape)._values()
    data = mem.storage.data
    fast = _plain_load(state, mem, offsets, lanes, others, elem)
    if fast is not None:
        t = Tensor.new(fast[0], shape, elem.torch)
        mark = Tensor.new(fast[1], shape, D.bool_) if fast[1] is not None else None
        return tl.tensor(t, elem, None, mark)
    out, undefined = [], []
    zero = element(0, elem)
    for i, off in enumerate(offsets):
        if lanes is not None and not lanes[i]:
            if others is not None:
                out.append(others[i])
                undefined.append(False)
            else:
                out.append(zero)
                undefined.append(True)
            continue
        _bounds(off, mem, "tl.load")
        _note_read(state, mem, off)
        v = read(data, off)
        if v is UNSET:
            raise _unwritten(off, mem)
        out.append(v)
        undefined.append(False)
    t = Tensor.new(out, shape, elem.torch)
    mark = Tensor.new(undefined, shape, D.bool_) if any(undefined) else None
    return tl.tensor(t, elem, None, mark)


def _plain_load(state: Launch, mem: _Memory, offsets: list, lanes, others, elem):
    """:func:`load` where every lane's offset is a plain integer: the same checks (bounds, a
    read of what another program of the launch stores, unwritten memory) and the same values,
    in one pass; ``(values, undefined marks or None)``, or ``None`` for other offsets."""
    if any(type(o) is not int for o in offsets):
        return None
    data = mem.storage.data
    n = len(data)
    sid = id(mem.storage)
    pid = state.pid
    writes = state.writes
    reads = state.reads.get(sid)
    if reads is None:
        reads = state.reads[sid] = {}
    out = []
    undefined = None
    zero = None
    for i, off in enumerate(offsets):
        if lanes is not None and not lanes[i]:
            if others is not None:
                out.append(others[i])
                continue
            if zero is None:
                zero = element(0, elem)
                undefined = [False] * len(offsets)
            out.append(zero)
            undefined[i] = True
            continue
        if not 0 <= off < n:
            _bounds(off, mem, "tl.load")             # refused there, in its words
        if writes:
            writer = writes.get((sid, off))
            if writer is not None and writer != pid:
                _note_read(state, mem, off)          # refused there, in its words
        seen = reads.get(off)                        # state.read_by, inline
        if seen is None:
            reads[off] = pid
        elif type(seen) is set:
            seen.add(pid)
        elif seen != pid:
            reads[off] = {seen, pid}
        v = data[off]
        if v is UNSET:
            raise _unwritten(off, mem)
        out.append(v)
    if undefined is not None and zero is not None and not any(undefined):
        undefined = None
    return out, undefined


def _unwritten(off, mem: _Memory):
    return refuse(f"tl.load of element {off} of argument {mem.name}, which nothing wrote "
                  "(torch.empty memory no program or launch argument stored)")


def _note_read(state: Launch, mem: _Memory, off) -> None:
    sid = id(mem.storage)
    for o in (off.values if type(off) is Branched else (off,)):
        writer = state.writes.get((sid, o))
        if writer is not None and writer != state.pid:
            raise refuse(f"tl.load of element {o} of argument {mem.name}, which program "
                         f"{_pid_text(writer)} of this launch stores: the programs of a launch "
                         "run in no defined order (a race)")
        state.read_by(sid, o)


def _pid_text(pid) -> str:
    return str(pid[0]) if pid[1:] == (0, 0) else str(pid)


def store(pointer, value, mask=None, boundary_check=(), cache_modifier="",
          eviction_policy="") -> None:
    """``tl.store(pointer, value, mask=None)``: the value (cast to the pointed dtype) written
    at every lane the mask keeps."""
    state = launch()
    pointer = _pointer(pointer, "tl.store")
    if boundary_check:
        raise refuse("tl.store with boundary_check (block pointers) is outside exactspec's "
                     "Triton layer")
    mem, elem = pointer.base, pointer.dtype.element_ty
    shape = tuple(pointer.t.shape)
    vb = as_block(value, elem)
    values = _expand(vb.t, shape)._values()
    marks = _expand(vb.undefined, shape)._values() if vb.undefined is not None else None
    lanes = _mask_lanes(mask, shape, "tl.store")
    offsets = pointer.t._values()
    sid = id(mem.storage)
    data = mem.storage.data
    written = set()
    state.keep.append(mem.storage)
    for i, off in enumerate(offsets):
        if lanes is not None and not lanes[i]:
            continue
        if type(off) is not int:
            if type(off) is Branched:
                raise CannotProceed("a tl.store at an offset on the draft's branches")
            raise CannotProceed("a tl.store at an offset that is not a plain integer")
        _bounds(off, mem, "tl.store")
        if marks is not None and marks[i] is True:
            raise refuse(f"tl.store of a lane that a masked tl.load without other= left "
                         f"undefined (element {off} of argument {mem.name})")
        if off in written:
            raise refuse(f"two lanes of one tl.store write element {off} of argument "
                         f"{mem.name}: which one the GPU keeps is not defined")
        written.add(off)
        writer = state.writes.get((sid, off))
        if writer is not None and writer != state.pid:
            raise refuse(f"tl.store to element {off} of argument {mem.name}, which program "
                         f"{_pid_text(writer)} of this launch stores too: the programs of a "
                         "launch run in no defined order (a store race)")
        others = state.readers(sid, off)
        if others:
            raise refuse(f"tl.store to element {off} of argument {mem.name}, which program "
                         f"{_pid_text(others[0])} of this launch loads: the programs of a "
                         "launch run in no defined order (a race)")
        state.writes[(sid, off)] = state.pid
        data[off] = values[i]
    mem.storage.version += 1
