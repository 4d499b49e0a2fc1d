"""The registry of verification methods: one module per method, one contract (:class:`Method`).

>>> {"sps", "naive", "top1", "rrs", "rrs-wor", "kseq", "spechub", "optimal"} <= set(METHODS)
True
"""

from __future__ import annotations

from ..core.errors import InvalidInput, did_you_mean
from ..core.user_code import load_user_object
from .base import Method, as_method
from . import naive as _naive, sps as _sps, top1 as _top1

__all__ = ["METHODS", "Method", "as_method", "get_method", "load_user_method",
           "load_user_object"]

METHODS: dict[str, Method] = {m.name: m for m in (_sps.METHOD, _naive.METHOD, _top1.METHOD)}


def register(method: Method) -> Method:
    """Add a method to the registry (used by method modules)."""
    METHODS[method.name] = method
    return method


# the multi-draft methods, one module each
from . import kseq as _kseq, optimal as _optimal, rrs as _rrs, rrs_wor as _rrs_wor, \
    spechub as _spechub  # noqa: E402

for _module in (_rrs, _rrs_wor, _kseq, _spechub, _optimal):
    register(_module.METHOD)

from . import key as _key, key_lazy as _key_lazy  # noqa: E402
register(_key.METHOD), register(_key_lazy.METHOD)

# rules that are lossy by design (claimed_lossless=False): compare lists them apart
from . import greedy as _greedy, truncated as _truncated, typical as _typical  # noqa: E402
for _method in (_typical.METHOD, _greedy.METHOD, _truncated.TOP_K, _truncated.TOP_P):
    register(_method)


def get_method(spec) -> Method:
    """A registered name, a :class:`Method`, a function, or ``file.py:function`` /
    ``module:function`` naming a user's verifier."""
    if isinstance(spec, Method):
        return spec
    if callable(spec):
        return as_method(spec)
    if not isinstance(spec, str):
        raise InvalidInput(f"method {spec!r}: give a name such as sps, or file.py:function")
    if spec in METHODS:
        return METHODS[spec]
    if ":" in spec:
        return load_user_method(spec)
    known = ", ".join(sorted(METHODS))
    raise InvalidInput(f"unknown method {spec!r}{did_you_mean(spec, METHODS)}: choose one of "
                       f"{known}, "
                       "or file.py:function")


def load_user_method(spec: str) -> Method:
    """Load ``path/to/file.py:function`` or ``package.module:function``; a function of
    ``(p, q)`` in a file that imports torch is a PyTorch rule (:mod:`exactspec.torch_layer`)."""
    from ..torch_layer import load_pytorch_rule

    rule = load_pytorch_rule(spec)
    if rule is not None:
        return Method(name=spec, run=rule, summary=rule.summary, k_values=(1,), user=True,
                      tensor_rule=rule)
    return as_method(load_user_object(spec), name=spec)
