"""The files here are PyTorch rules that exactspec runs under its tensor layer (and tests run
under real torch when it is installed); they are not imported as test modules."""

collect_ignore_glob = ["*.py"]
