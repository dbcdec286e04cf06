from nnperf.cli._main import entry_point

entry_point()
