"""Multi-token drafting: context-dependent model pairs, chains, token trees, block verification.

- :mod:`.context`: context-dependent target/draft model pairs (the tree spec format);
- :mod:`.multitoken`: the sequence-level contract (a verifier of one target call), the joint
  law of the generated tokens, tokens per call, sequence proofs;
- :mod:`.chains`: chains of ``gamma`` drafted tokens verified token by token;
- :mod:`.block`: Sun et al.'s block verification;
- :mod:`.trees`: token trees, per-node rules (RRS, optimal transport), the sequence-level bug
  classes, the ``exactspec tree`` report (gathered from :mod:`.node_rules`,
  :mod:`.tree_verifier`, :mod:`.positional`, :mod:`.sequence_bugs` and :mod:`.tree_spec`).
"""
