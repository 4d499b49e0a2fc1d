"""Float sums of many terms in a declared order: what a kernel's reduction rounds to.

A float sum of ``n`` terms is rounded ``n - 1`` times, and the result depends on the order
the kernel adds them in (a running sum, several accumulators, a tree).  A sum is modelled
exactly once its order is declared; :data:`SUM_ORDERS` names the orders modelled:

- ``"sequential"``: ``((v0 + v1) + v2) + ...``, left to right, each addition rounded into
  the accumulator (the dtype itself for ``float32`` and ``float64``; ``float32`` for
  ``float16`` and ``bfloat16``, as torch accumulates them), then rounded once into the dtype;
- ``"correctly-rounded"``: the exact sum, rounded once into the dtype (what an accumulator
  wide enough to hold every partial sum exactly gives);
- ``"torch-avx2"``: PyTorch's CPU ``sum`` as its cascade kernel computes it when compiled for
  AVX2 (``torch.backends.cpu.get_cpu_capability() == "AVX2"``, 256-bit vectors): the row is
  read as vectors of 8 ``float32`` lanes (4 for ``float64``; a ``float16`` vector of 16 is
  folded to 8 ``float32`` lanes by adding neighbours, a ``bfloat16`` one by adding its two
  halves), the vectors are summed in groups of 4 with a cascade of 4 levels of accumulators
  (each level adding ``2**max(4, ceil(log2 n) // 4)`` sums of the level below), the leftover
  elements and then the lanes are added to a scalar accumulator; rows shorter than one vector
  take the scalar version of the same cascade.  ``"torch-avx2:T"`` is the same kernel run by
  ``T`` threads (``torch.get_num_threads()``): a row of at least ``2**15`` elements is then
  cut into ``min(T, ceil(n / 2**15))`` equal chunks, each summed as above into the dtype,
  and the chunk sums summed in the same way; ``"torch-avx2"`` is ``"torch-avx2:1"``.
  Checked bit for bit against torch 2.13 on an AVX2 CPU with 1 and 2 threads
  (``tests/test_floats.py``, where torch is installed), ``float32``, ``float64``, ``float16``
  and ``bfloat16``, rows of 1 to 152,064 terms.  Other capabilities (AVX512, 16 lanes;
  no vectors) sum in another order and are not modelled.

NaN and infinities propagate as IEEE says in every order (a NaN term, or ``inf`` and
``-inf``, give NaN).

>>> f32 = FORMATS["float32"]
>>> row = [1.0] + [2.0 ** -24] * 16          # 2**-24 is half an ulp of 1 in float32
>>> float_sum(row, f32, "sequential")        # every 1 + 2**-24 is a tie, rounded to 1
1.0
>>> float_sum(row, f32, "correctly-rounded") # 1 + 2**-20
1.0000009536743164
>>> float_sum(row, f32, "torch-avx2")        # 1 + 7 * 2**-23: the lanes pair the small terms
1.0000008344650269
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..core.errors import InvalidInput
from .floats import FORMATS, FloatFormat

__all__ = ["SUM_ORDERS", "check_sum_order", "float_sum", "TORCH_GRAIN"]

#: The declared orders (``"torch-avx2:T"`` also names ``T`` threads).
SUM_ORDERS = ("sequential", "correctly-rounded", "torch-avx2")

#: The smallest row PyTorch's CPU reductions split between threads (``internal::GRAIN_SIZE``).
TORCH_GRAIN = 32768


def check_sum_order(order) -> str | None:
    """``order`` checked: ``None`` (no order declared), one of :data:`SUM_ORDERS`, or
    ``"torch-avx2:T"`` for ``T >= 1`` threads.

    >>> check_sum_order("torch-avx2:2")
    'torch-avx2:2'
    >>> check_sum_order("pairwise")
    Traceback (most recent call last):
    ...
    exactspec.core.errors.InvalidInput: sum order 'pairwise': choose sequential, correctly-rounded or torch-avx2 (torch-avx2:T for T threads)
    """
    if order is None or order in SUM_ORDERS:
        return order
    head, _, threads = str(order).partition(":")
    if head == "torch-avx2" and threads.isdigit() and 1 <= int(threads) <= 1024:
        return order
    raise InvalidInput(f"sum order {order!r}: choose sequential, correctly-rounded or "
                       "torch-avx2 (torch-avx2:T for T threads)")


def _accumulator(fmt: FloatFormat) -> FloatFormat:
    return FORMATS["float64"] if fmt.name == "float64" else FORMATS["float32"]


def _special(values):
    """The IEEE sum when a term is NaN or infinite, else ``None``."""
    nan = pos = neg = False
    for v in values:
        if v != v:
            nan = True
        elif v == math.inf:
            pos = True
        elif v == -math.inf:
            neg = True
    if nan or (pos and neg):
        return math.nan
    if pos or neg:
        return math.inf if pos else -math.inf
    return None


def float_sum(values, fmt: FloatFormat, order: str) -> float:
    """The sum of ``values`` (Python floats holding values of ``fmt``) in ``order``, as a
    Python float of ``fmt`` (module text).  An empty sum is ``0.0``."""
    order = check_sum_order(order)
    if order is None:
        raise InvalidInput("float_sum needs a declared order")
    values = [float(v) for v in values]
    if not values:
        return 0.0
    if order == "correctly-rounded":
        return _correctly_rounded(values, fmt)
    if order == "sequential":
        special = _special(values)
        if special is not None:
            return special
        acc = _accumulator(fmt)
        if acc.name == "float64":
            import numpy as np

            total = float(np.add.accumulate(np.array(values, dtype=np.float64))[-1])
        else:
            import numpy as np

            total = float(np.add.accumulate(np.array(values, dtype=np.float32))[-1])
        return fmt.round(total) if math.isfinite(total) else total
    threads = int(order.partition(":")[2] or 1)
    return _torch_avx2(values, fmt, threads)


def _correctly_rounded(values, fmt: FloatFormat) -> float:
    special = _special(values)
    if special is not None:
        return special
    if fmt.precision <= 24:                    # every value is an integer times 2**shift
        shift = fmt.precision - 1 - fmt.emin
        total = sum(int(math.ldexp(v, shift)) for v in values)
        exact = Fraction(total, 1 << shift)
    else:
        exact = sum((Fraction(v) for v in values), Fraction(0))
    if exact == 0:
        return -0.0 if all(math.copysign(1, v) < 0 for v in values) else 0.0
    return fmt.round(exact)


def _ceil_log2(x: int) -> int:
    return 1 if x <= 2 else (x - 1).bit_length()


def _multi_row_sum(rows, zero):
    """The cascade of :func:`_torch_avx2` over ``rows`` (each a NumPy array of accumulators
    of one shape): 4 levels, each adding ``2**power`` sums of the level below."""
    import numpy as np

    size = len(rows)
    levels = 4
    power = max(4, _ceil_log2(size) // levels)
    step = 1 << power
    mask = step - 1
    acc = [np.full_like(zero, 0) for _ in range(levels)]
    i = 0
    while i + step <= size:
        for _ in range(step):
            acc[0] = acc[0] + rows[i]
            i += 1
        for j in range(1, levels):
            acc[j] = acc[j] + acc[j - 1]
            acc[j - 1] = np.full_like(zero, 0)
            if i & (mask << (j * power)):
                break
    while i < size:
        acc[0] = acc[0] + rows[i]
        i += 1
    for j in range(1, levels):
        acc[0] = acc[0] + acc[j]
    return acc[0]


def _row_sum(loads, lanes: int, dtype):
    """``row_sum`` of the kernel: ``loads`` (vectors of ``lanes`` accumulators) read as rows
    of 4, cascaded, the leftover vectors added to the first of the 4, then the 4 added."""
    import numpy as np

    ilp = 4
    size = len(loads)
    size_ilp = size // ilp
    zero = np.zeros((ilp, lanes), dtype)
    grouped = loads[:size_ilp * ilp].reshape(size_ilp, ilp, lanes)
    partial = _multi_row_sum(grouped, zero)
    first = partial[0]
    for i in range(size_ilp * ilp, size):
        first = first + loads[i]
    for k in range(1, ilp):
        first = first + partial[k]
    return first


def _torch_chunk(x, fmt: FloatFormat):
    """One thread's sum of the row ``x`` (a NumPy array in the accumulator's dtype holding
    values of ``fmt``), as an accumulator scalar."""
    import numpy as np

    dtype = x.dtype
    lanes = 4 if fmt.name == "float64" else 8
    per = lanes if fmt.name in ("float32", "float64") else 2 * lanes
    n = len(x)
    if n < per:                                # the scalar kernel: lanes of one
        return _row_sum(x.reshape(n, 1), 1, dtype)[0]
    vec_size = n // per
    block = x[:vec_size * per].reshape(vec_size, per)
    if fmt.name == "float16":                  # neighbours folded: (0 + v[2l]) + v[2l + 1]
        loads = (dtype.type(0) + block[:, 0::2]) + block[:, 1::2]
    elif fmt.name == "bfloat16":               # halves folded: v[l] + v[l + 8]
        loads = block[:, :lanes] + block[:, lanes:]
    else:
        loads = block
    vector = _row_sum(loads, lanes, dtype)
    final = dtype.type(0)
    for k in range(vec_size * per, n):
        final = final + x[k]
    for lane in vector:
        final = final + lane
    return final


def _torch_avx2(values, fmt: FloatFormat, threads: int) -> float:
    import numpy as np

    dtype = np.float64 if fmt.name == "float64" else np.float32
    x = np.array(values, dtype=dtype)

    def into(v) -> float:                      # the output tensor's ``0 + v`` in the dtype
        v = float(dtype(0) + v)
        return fmt.round(v) if math.isfinite(v) else v

    with np.errstate(all="ignore"):
        n = len(x)
        if n < TORCH_GRAIN or threads == 1:
            return into(_torch_chunk(x, fmt))
        tasks = min(threads, -(-n // TORCH_GRAIN))
        chunk = -(-n // tasks)
        buffer = [0.0] * threads
        for t in range(tasks):
            if t * chunk < n:
                buffer[t] = into(_torch_chunk(x[t * chunk:min(n, (t + 1) * chunk)], fmt))
        return into(_torch_chunk(np.array(buffer, dtype=dtype), fmt))
