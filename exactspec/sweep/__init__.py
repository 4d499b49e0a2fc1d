"""Sweeps over logits dumps: every method's acceptance at every position of real
target/draft rows, on the local machine or a Dask cluster (``exactspec sweep``).

- :mod:`.dump`: reading ``.npz``, ``.npy`` directories, safetensors and Zarr lazily
  (layout: docs/sweep_format.md);
- :mod:`.rows`: logits to float64 probabilities (temperature, top-p), bad rows named;
- :mod:`.figures`: the per-position figures in floats;
- :mod:`.exact_check`: the same figures exactly, on the float rows converted without loss;
- :mod:`.summary`: means with 95% intervals, RRS's gap and rejection-ratio statistics;
- :mod:`.engine`: the Dask execution (:func:`sweep`; :func:`sweep_arrays` for rows in memory);
- :mod:`.output`: Parquet/CSV, the text summary, the plots; the long-form table
  (:func:`tidy_columns`, :func:`to_dataframe`), the Dataset (:func:`to_dataset`) and the
  summary as records (:func:`tidy_summary`);
- :mod:`.report`: the sweep as one self-contained HTML file (:func:`html_report`).

The sweep needs the ``sweep`` extra (Dask and the format libraries); importing this package
does not.
"""

from .dump import Dump, open_dump
from .engine import (ArrayDump, SweepConfig, SweepResult, block_ranges, connect, sweep,
                     sweep_arrays)
from .figures import METHODS
from .output import (plot, read_table, summary_text, tidy_columns, tidy_summary, to_dataframe,
                     to_dataset, write_table)
from .report import html_report

__all__ = ["Dump", "open_dump", "SweepConfig", "SweepResult", "sweep", "sweep_arrays",
           "ArrayDump", "connect", "block_ranges", "METHODS", "plot", "read_table",
           "summary_text", "tidy_columns", "tidy_summary", "to_dataframe", "to_dataset",
           "html_report", "write_table"]
