"""Bounds and comparisons built on the methods: how far each method falls short of the optimum.

- :mod:`.rho`: ``rho_k``, the tight bound ``alpha_RRS >= rho_k alpha*`` (closed form derived
  with sympy, the tight instances run through the engine, the report behind ``exactspec rho``);
- :mod:`.compare`: every method against the optimum of its own draft law
  (``exactspec compare``, ``exactspec optimal``);
- :mod:`.guarantees`: the method-vs-optimum guarantees (RRS without replacement, K-SEQ's
  constants);
- :mod:`.khisti`: Khisti et al.'s two-draft optimum and its canonical LP;
- :mod:`.closed_forms`: closed forms of the methods' acceptances, the seed's example, and the
  ``same(closed_form, enumeration, cases)`` helper.

Nothing below this package (the core, the engine, the optimum, the methods) imports it.
"""
