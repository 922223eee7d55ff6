"""Measure one `harness` command in this process: wall time, the parent's CPU (the engine), the workers' CPU, and
the parent's peak memory. The figures in docs/performance.md come from it:

    python benchmarks/engine_scale.py 10000 1 /tmp/scale/s10k.yaml   # a spec of 10,000 seeds × 1 dataset
    HARNESS_PLUGINS=toy_plugin:CATALOGUE PYTHONPATH=tests/plugins \\
        python benchmarks/measure_run.py run /tmp/scale/s10k.yaml --out /tmp/scale/out --jobs 1 --no-progress
"""
from __future__ import annotations

import resource
import sys
import time

if __name__ == "__main__":  # workers started with spawn import this module again: only the parent measures
    from harness.cli import main

    started = time.perf_counter()
    code = main(sys.argv[1:])
    wall = time.perf_counter() - started
    own, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"exit {code}: wall {wall:.2f} s, parent CPU {own.ru_utime + own.ru_stime:.2f} s, workers' CPU "
          f"{workers.ru_utime + workers.ru_stime:.2f} s, parent peak {own.ru_maxrss / 1024:.0f} MiB", file=sys.stderr)
    sys.exit(code)
