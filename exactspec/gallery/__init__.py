"""The catalogue of bug classes: real lossy rules next to their correct versions, and the
counterexample search that finds such rules' smallest failing instances.

- :mod:`.one_draft`: one-draft bug classes (reused uniform, wrong ``q``, filtered target, ...);
- :mod:`.multi_draft`: multi-draft bug classes (RRS on drafts without replacement, ...);
- :mod:`.engines`: engine-shaped chain rules (vLLM, FlashInfer, transformers, SGLang, block
  verification as kernels write them) next to bug classes of their own kind;
- :mod:`.search`: search of small rational instances for a counterexample.

Machinery never imports the gallery; the claims and the command line do.
"""

from .multi_draft import GALLERY_MULTI, run_gallery_multi
from .one_draft import GALLERY, run_gallery
from .search import search_counterexample

__all__ = ["GALLERY", "GALLERY_MULTI", "run_gallery", "run_gallery_multi",
           "search_counterexample"]
