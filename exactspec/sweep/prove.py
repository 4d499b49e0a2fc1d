"""The claims behind ``exactspec prove`` on the sweep's engine: one Dask task per claim, on a
cluster (``--scheduler``) or the local threads.

Each task runs one registered claim where it lands and sends back its
:class:`~exactspec.claims.base.ClaimResult` (verdict, details, certificate); claims run side by
side, each claim's own corpus inside its task.
"""

from __future__ import annotations

from ..claims import all_claims, get_claim
from ..claims.base import ClaimResult
from .engine import compute_local, compute_on, connect, require_dask

__all__ = ["run_claims"]


def _run(name: str, full: bool = True) -> ClaimResult:
    return get_claim(name).run(full)


def run_claims(names=None, *, client=None, scheduler: str | None = None,
               scheduler_timeout: float = 10.0, progress: bool = False,
               full: bool = True) -> list:
    """``[(claim, result)]`` for the named claims (default all), computed as Dask tasks."""
    require_dask()
    import dask

    claims = [get_claim(n) for n in names] if names else all_claims()
    tasks = [dask.delayed(_run, pure=False)(c.name, full) for c in claims]
    own = None
    if client is None and scheduler is not None:
        client = own = connect(scheduler, scheduler_timeout)
    try:
        results = (compute_local(tasks, None, progress) if client is None
                   else compute_on(client, tasks, progress))
    finally:
        if own is not None:
            own.close()
    return list(zip(claims, results))
