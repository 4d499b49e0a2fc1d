"""A kernel's ``if`` on a value of the program: both branches where the condition is a race's.

Triton compiles an ``if`` whose condition is a value of the program (not a ``constexpr``) into
one structured branch whose results are the names either side assigns: a select, not a jump.
The layer runs a kernel's Python body the same way.  When a ``@triton.jit`` function is first
run, its source is parsed and every ``if`` statement is rewritten (same file, same lines) so
that its condition is evaluated first and the statement then runs through :func:`run_if`:

- a condition that is a plain value (a bool, a block, a split of the engine) is read as
  Python reads it and the one branch runs, as written;
- a condition that is a comparison of the maxima of two races over disjoint parts of one
  noise vector (:class:`~exactspec.torch_layer.noise.RaceOrder`: a kernel's running maximum
  across tiles, ``if local_max > max_val: max_val = local_max; recovered_id = v +
  local_id``), where the branches only bind local names and call nothing but the Triton
  language, runs both branches, each on a copy of the names it assigns, and each name
  then holds what :func:`~exactspec.torch_layer.noise.race_maxima_selected` makes of the two:
  the maximum over both parts, and the winner over both parts as the mixture of the two
  winners' laws.  No branch point is made, so a kernel that tiles a vocabulary of ``T``
  tiles is one path, not ``2**(T - 1)``.  A name whose two values cannot be selected that
  way, or a branch that stores, draws or launches, decides the comparison instead (the
  engine's coin on the path routes; on a vectorised route the rule goes to the paths);
- on the factored route, a condition that is a comparison of a fresh uniform (a tile's
  ``if`` of an inverse-CDF search), where the branches are pure in the same sense, runs both
  branches, each on its interval of the uniform (:mod:`.uniform_cases`).

An ``if`` whose branches ``return``, ``break`` or ``continue`` out of it, ``yield`` or bind a
name with ``:=``, and a kernel with free variables, ``global`` or ``nonlocal`` names or whose
source cannot be read, run as written (every condition read as a Python bool).

>>> import textwrap
>>> source = textwrap.dedent('''
...     def f(x):
...         if x > 1:
...             y = 1
...         else:
...             y = 2
...         return y
... ''')
>>> g = rewritten(source, "f", {}, "<doc>", 0)
>>> g(3), g(0)
(1, 2)
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from ..core.signals import CannotProceed
from ..torch_layer.context import current
from ..torch_layer.noise import RaceOrder, race_maxima_selected
from .state import LAUNCHES, UNBOUND
from .uniform_cases import cases_if, lazy_condition

__all__ = ["run_if", "branched_body", "rewritten", "UNBOUND"]


_PREFIX = "__exactspec_"


def run_if(condition, then, orelse, values: tuple, pure: bool = False) -> tuple:
    """One rewritten ``if``: ``condition()`` evaluated (with race maxima's comparisons kept
    undecided where the branches are ``pure``: they bind local names and call nothing but the
    Triton language), then ``then(values)`` or ``orelse(values)`` (each returns the names it
    may assign), or both and their values selected (see the module's text)."""
    run = current()
    before = getattr(run, "lazy_orders", False)
    run.lazy_orders = pure
    try:
        c = condition()
    finally:
        run.lazy_orders = before
    if pure:
        lazy = lazy_condition(c)
        if lazy is not None:            # a comparison of a fresh uniform: both, each on its part
            return cases_if(lazy, then, orelse, values, lambda: _marks(run))
    order = _order_of(c)
    if order is None or order.decided is not None:
        return then(values) if c else orelse(values)
    marks = _marks(run)
    first = then(values)
    second = orelse(values)
    if _marks(run) != marks:             # a store, a draw, a launch in a branch: decide
        raise CannotProceed("a branch of a kernel's if on race maxima that stores or draws")
    out = []
    for t, e in zip(first, second):
        if t is e:
            out.append(t)
            continue
        chosen = _selected(order, t, e)
        if chosen is None:
            return first if order else second
        out.append(chosen)
    return tuple(out)


def _order_of(c):
    """The undecided race order a condition is (a block of one element holding one), else
    ``None``."""
    if type(c) is RaceOrder:
        return c
    t = getattr(c, "t", None)
    if t is not None and getattr(t, "numel", None) is not None and t.numel() == 1:
        v = t._values()[0]
        if type(v) is RaceOrder:
            return v
    return None


def _marks(run) -> tuple:
    """What a branch must leave as it found: the sampler's choices and draws, the launch's
    stores."""
    sampler = run.sampler
    counts = tuple(getattr(sampler, n, None) for n in ("_depth", "_calls", "_uniforms",
                                                       "_noises"))
    return counts, len(LAUNCHES[-1].keep) if LAUNCHES else 0


def _selected(order: RaceOrder, t, e):
    """What one name holds after the ``if``: blocks of one element each, or plain values."""
    tt, et = getattr(t, "t", None), getattr(e, "t", None)
    if tt is not None and et is not None and type(t) is type(e) and \
            getattr(t, "dtype", None) == getattr(e, "dtype", None) and \
            tt.numel() == 1 and et.numel() == 1 and tt.shape == et.shape:
        a, b = tt._values()[0], et._values()[0]
        if a is b:
            return t
        chosen = race_maxima_selected(order, a, b)
        if chosen is None:
            return None
        from .blocks import block

        return block(type(tt).new([chosen], tt.shape, tt.dtype), t.dtype)
    if type(t) in (int, bool) and type(e) is type(t) and t == e:
        return t
    return None


# -- the rewriting ------------------------------------------------------------------------

def branched_body(fn):
    """``fn`` with its ``if`` statements rewritten (see the module's text), or ``fn`` itself
    where it cannot be (free variables, no source, a syntax the rewriting does not take)."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_freevars:
        return fn
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return fn
    source = textwrap.dedent("".join(lines))
    try:
        out = rewritten(source, fn.__name__, fn.__globals__, code.co_filename, first - 1)
    except (SyntaxError, ValueError):
        return fn
    if out is None:
        return fn
    out.__defaults__ = fn.__defaults__
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__doc__ = fn.__doc__
    return out


def rewritten(source: str, name: str, globals_: dict, filename: str, offset: int):
    """The function ``name`` defined by ``source`` with its ``if`` statements rewritten,
    compiled as in ``filename`` (its lines moved down by ``offset``) over ``globals_``;
    ``None`` when ``source`` does not define it alone."""
    tree = ast.parse(source)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    if len(tree.body) != 1 or len(defs) != 1:
        return None
    fdef = defs[0]
    if any(isinstance(node, (ast.Global, ast.Nonlocal)) for node in ast.walk(fdef)):
        return None                      # names bound outside the kernel: run as written
    fdef.decorator_list = []
    fdef.returns = None
    for a in fdef.args.args + fdef.args.posonlyargs + fdef.args.kwonlyargs:
        a.annotation = None
    fdef.args.defaults = []
    fdef.args.kw_defaults = [None] * len(fdef.args.kwonlyargs)
    fdef.body = _Rewriter({n for n, v in globals_.items() if _language(v)}).statements(
        fdef.body)
    maker = ast.FunctionDef(
        name=_PREFIX + "make",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(_PREFIX + "if"),
                                                 ast.arg(_PREFIX + "unbound")],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fdef, ast.Return(ast.Name(name, ast.Load()))], decorator_list=[], returns=None)
    module = ast.Module(body=[maker], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, offset)
    namespace: dict = {}
    exec(compile(module, filename, "exec"), globals_, namespace)
    return namespace[_PREFIX + "make"](run_if, UNBOUND)


class _Rewriter:
    """Rewrites the ``if`` statements of a function's body (not of functions inside it)."""

    def __init__(self, language: set):
        self.count = 0
        self.language = language       # the kernel's global names of the Triton language

    def statements(self, body: list) -> list:
        out = []
        for stmt in body:
            out.extend(self.statement(stmt))
        return out

    def statement(self, stmt) -> list:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return [stmt]
        if isinstance(stmt, ast.If):
            pure = _pure(stmt.body + stmt.orelse, self.language)     # as the user wrote it
            stmt.body = self.statements(stmt.body)
            stmt.orelse = self.statements(stmt.orelse)
            if _rewritable(stmt):
                return self._if(stmt, pure)
            return [stmt]
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                setattr(stmt, field, self.statements(inner))
        if isinstance(stmt, ast.Try):
            for h in stmt.handlers:
                h.body = self.statements(h.body)
        return [stmt]

    def _if(self, stmt: ast.If, pure: bool) -> list:
        k = self.count
        self.count += 1
        names = sorted(_assigned(stmt.body) | _assigned(stmt.orelse))
        then_name, else_name = f"{_PREFIX}then_{k}", f"{_PREFIX}else_{k}"
        values = f"{_PREFIX}in_{k}"
        out = [self._branch(then_name, stmt.body, names, stmt),
               self._branch(else_name, stmt.orelse or [ast.Pass()], names, stmt)]
        out.extend(_read_names(names, values, stmt))
        call = ast.Call(ast.Name(_PREFIX + "if", ast.Load()),
                        [ast.Lambda(_no_args(), stmt.test), ast.Name(then_name, ast.Load()),
                         ast.Name(else_name, ast.Load()), ast.Name(values, ast.Load()),
                         ast.Constant(pure)], [])
        target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
        out.append(ast.Assign([target], call) if names else ast.Expr(call))
        out.extend(_unbind(names))
        for node in out:
            ast.copy_location(node, stmt)
        return out

    def _branch(self, fname: str, body: list, names: list, where) -> ast.FunctionDef:
        inner = f"{_PREFIX}in"
        start = []
        if names:
            start.append(ast.Assign([ast.Tuple([ast.Name(n, ast.Store()) for n in names],
                                               ast.Store())], ast.Name(inner, ast.Load())))
            start.extend(_unbind(names))
        end = _read_names(names, f"{_PREFIX}out", where)
        end.append(ast.Return(ast.Name(f"{_PREFIX}out", ast.Load())))
        fdef = ast.FunctionDef(name=fname, args=ast.arguments(
            posonlyargs=[], args=[ast.arg(inner)], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=start + body + end, decorator_list=[], returns=None)
        for node in start + end:
            ast.copy_location(node, where)
        return ast.copy_location(fdef, where)


def _no_args() -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])


def _read_names(names: list, target: str, where) -> list:
    """``target = (n1, n2, ...)``, each name that is not bound read as :data:`UNBOUND`."""
    out = []
    parts = []
    for i, n in enumerate(names):
        tmp = f"{_PREFIX}v{i}"
        out.append(ast.Try(
            body=[ast.Assign([ast.Name(tmp, ast.Store())], ast.Name(n, ast.Load()))],
            handlers=[ast.ExceptHandler(ast.Name("NameError", ast.Load()), None, [
                ast.Assign([ast.Name(tmp, ast.Store())],
                           ast.Name(_PREFIX + "unbound", ast.Load()))])],
            orelse=[], finalbody=[]))
        parts.append(ast.Name(tmp, ast.Load()))
    out.append(ast.Assign([ast.Name(target, ast.Store())], ast.Tuple(parts, ast.Load())))
    for node in out:
        ast.copy_location(node, where)
    return out


def _unbind(names: list) -> list:
    """``if n is UNBOUND: del n`` for each name."""
    return [ast.If(ast.Compare(ast.Name(n, ast.Load()), [ast.Is()],
                               [ast.Name(_PREFIX + "unbound", ast.Load())]),
                   [ast.Delete([ast.Name(n, ast.Del())])], []) for n in names]


_FORBIDDEN = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal,
              ast.NamedExpr)


def _rewritable(stmt: ast.If) -> bool:
    """No ``return``/``yield``/``global``/``nonlocal``/``:=`` in the statement, and no
    ``break``/``continue`` outside a loop inside it."""
    def walk(node, in_loop: bool) -> bool:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                  ast.Lambda)):
                continue
            if isinstance(child, _FORBIDDEN):
                return False
            if isinstance(child, (ast.Break, ast.Continue)) and not in_loop:
                return False
            loop = isinstance(child, (ast.For, ast.While, ast.AsyncFor))
            if not walk(child, in_loop or loop):
                return False
        return True

    return walk(stmt, False)


def _language(value) -> bool:
    """Whether ``value`` is one of this layer's stand-ins for ``triton`` and its modules
    (:mod:`.module`, which makes them; known here by type, as it imports this module)."""
    return type(value).__module__ == _MODULES and \
        getattr(value, "__name__", "").split(".")[0] == "triton"


_MODULES = __name__.rsplit(".", 1)[0] + ".module"


#: the methods of a block that make a new block and change nothing (``x.to(tl.int32)``)
_BLOCK_METHODS = frozenset(("to", "reshape", "broadcast_to", "expand_dims", "trans",
                            "permute"))


def _pure(body: list, language: set) -> bool:
    """Whether running the statements changes nothing but their local names (so both
    branches may run): every call is a function of the Triton language (``tl.where``; a
    ``tl.store`` or a draw is caught as it runs), every binding a plain name."""
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                f = node.func
                while isinstance(f, ast.Attribute):
                    f = f.value
                if isinstance(node.func, ast.Attribute) and node.func.attr in _BLOCK_METHODS:
                    continue                 # x.to(tl.int32): a new block of the same lanes
                if not (isinstance(node.func, ast.Attribute) and isinstance(f, ast.Name) and
                        f.id in language):
                    return False
            elif isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)) and \
                    isinstance(node.ctx, (ast.Store, ast.Del)):
                return False
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                   ast.Lambda, ast.Import, ast.ImportFrom)):
                return False
    return True


def _assigned(body: list) -> set:
    """The names a list of statements binds (not inside functions or comprehensions)."""
    out: set = set()

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for stmt in body:
        visit(stmt)
    return {n for n in out if not n.startswith(_PREFIX)}
