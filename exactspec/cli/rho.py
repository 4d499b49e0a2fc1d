"""``exactspec rho``: ``rho_k``, the tight ratio of RRS to the optimum.
"""

from __future__ import annotations

from .output import emit
from .process import EXIT_OK


def cmd_rho(args) -> int:
    from ..bounds.rho.report import rho_report, rho_text

    if args.k > 64:  # large K: the closed form, not a derivation per K
        from ..bounds.rho.large import rho_large_report, rho_large_text

        emit(rho_large_report(args.k), args.json, rho_large_text(args.k))
        return EXIT_OK
    obj = rho_report(args.k)
    emit(obj, args.json, rho_text(args.k))
    return EXIT_OK
