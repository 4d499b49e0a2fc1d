"""The engine: one sampling interface, three interpreters.

A method is written once against the interface ``s``:

- ``s.draw(dist)``: a token drawn from ``dist``;
- ``s.coin(c)``: True with probability ``c``;
- ``s.draft(q)``, ``s.drafts(q, k, replace=True)``: drafts (remembered for ``P(Y in X)``);
- ``s.uniform()``: an explicit uniform ``u`` on ``[0, 1)``, compared with thresholds
  (``u < c``) and fed to ``s.pick(dist, u)``, the inverse-CDF lookup;
- ``s.accept(x)``: mark ``x`` as explicitly accepted (returns ``x``);
- ``E = s.exponentials(n)``, ``G = s.gumbels(n)``: noise vectors over the vocabulary, raced as
  ``(w / E).argmax()``, ``(E / w).argmin()``, ``(log(w) + G).argmax()`` or ``s.race(w, E)``,
  reusable across races (:mod:`.races`: exact joint laws over polyhedral cones);
- uniforms combined: ``1 - u``, ``u < v``, ``a*u < b*v``, ``min``/``max``, ``u * v < c``
  (:mod:`.joint`), and in log space ``log(u) + log(q) < log(p)``, ``-log(u)`` (:mod:`.logs`).

:mod:`.exact` enumerates every path in exact rationals, :mod:`.sampling` samples with a seeded
NumPy generator, and :mod:`.symbolic` runs the same code over sympy symbols, splitting into
cases over the signs of the comparisons it meets.
"""

from .exact import DEFAULT_MAX_PATHS, Enumeration, ExactSampler, Path, enumerate_paths, \
    estimate_paths

__all__ = ["DEFAULT_MAX_PATHS", "Enumeration", "ExactSampler", "Path", "enumerate_paths",
           "estimate_paths"]
