"""asv suite: kernel speed (``time_*``, ``peakmem_*``) and leaderboard numbers (``track_*``).

Run it through ``harness bench run`` and compare commits with ``harness bench compare``
(see docs/tracking.md). Each benchmark states an explicit ``version``:
bump it when a change to the benchmark itself (not to the code it times) makes old
results incomparable.
"""

import os as _os

from harness.hardware import THREAD_VARIABLES as _THREAD_VARIABLES

# One BLAS thread, as the specs run their cells (hardware.threads: 1): on a busy 2-core
# machine a two-thread eigensolve spins and its time varies 8× between runs. The variables
# cover libraries loaded from here on; asv's runner has loaded numpy already, so the
# libraries that are in memory (numpy's and scipy's OpenBLAS) are limited directly.
# Export OMP_NUM_THREADS (and friends) to time other settings.
for _variable in _THREAD_VARIABLES:
    _os.environ.setdefault(_variable, "1")


def _limit_loaded_blas() -> None:
    import scipy.linalg  # noqa: F401  (loads scipy's own BLAS, so that the limit reaches it too)
    import scipy.optimize  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=int(_os.environ["OPENBLAS_NUM_THREADS"]))


_limit_loaded_blas()
