"""vpipe_results: the published figures, generated from the committed runs (issue #42).

docs/RESULTS.md is generated whole from the newest suite run (docs/results/suite-DATE-COMMIT/,
made by scripts/gpu-suite); README.md's headline block from the same run; docs/HISTORY.md lists
every older run under docs/results/archive/, each packed as RUN.tar.xz with its summary RUN.json
(scripts/archive-run). Nothing published is typed.

Modules, one per part of the page, so a reader can find where a figure comes from:
  common      paths, reading files and archived runs (each read marks its run), ranges and rounding
  archive     an archived run's tarball and summary: packing them, and checking one against the other
  suite       finding and loading the newest suite run
  machine     the machine record and its calibration
  peers       end to end against FFmpeg and PyTorch, 1 and 8 streams
  strategies  the memory strategies in the pipeline, allocation latency, staging
  soak        the soak table
  kernels     the kernels against the copy bandwidth
  decode      decode scaling: raw NVDEC sessions, --streams, --decode-sessions
  python      the Python package against a PyTorch script
  steps       what the suite ran, with exit statuses
  smoke       the newest GPU smoke beside the suite
  memory      docs/MEMORY.md's measured guide
  pages       the RESULTS page, README's headline block, the fixed list of blocks per file
  history     docs/HISTORY.md: one line per archived run
  capacity    docs/CAPACITY.md's table
  ci          docs/CONTRIBUTING.md's clean-clone CI phase times
  integrity   the checks on the data itself: copies, empty files, runs nothing names
  cli         scripts/results [--check]
Standard library only.
"""
