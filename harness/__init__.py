"""harness: declarative YAML benchmark specs, run alike, stored per cell, ranked, and checked.

The public surface::

    from harness import load_spec, run, read_results
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["load_spec", "run", "read_results", "validate_spec"]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from harness.run import run
    from harness.spec.load import load_spec, validate_spec
    from harness.store import read_results


def __getattr__(name: str):
    # lazy, so `import harness` (and so `harness --help`) stays light
    if name in ("load_spec", "validate_spec"):
        from harness.spec import load

        return getattr(load, name)
    if name == "run":
        from harness.run import run

        return run
    if name == "read_results":
        from harness.store import read_results

        return read_results
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
