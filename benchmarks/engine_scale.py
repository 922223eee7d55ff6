"""The engine's cost as a spec grows: whole runs of no-op cells (the toy plugin's ``toy-constant``, as in
``tests/plugins``), fresh and re-run, at 1,000 and 10,000 cells, and the planning of a 10,000-dataset spec.

A per-cell cost that stays flat from 1k to 10k cells is the goal (issue 15); a return of a quadratic
step (a scan of every pending cell per dispatch, a JSON dump of the spec per row) shows as the 10k
figure growing ten times faster than the 1k one. Wall time: the cells run in a worker process.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[1] / "tests" / "plugins"


def _use_toy_plugin() -> None:
    """The toy plugin for this process and the workers it starts."""
    os.environ["HARNESS_PLUGINS"] = "toy_plugin:CATALOGUE"
    os.environ["PYTHONPATH"] = os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")])
    if str(PLUGINS) not in sys.path:
        sys.path.insert(0, str(PLUGINS))
    from harness.registry import default_registry

    default_registry.cache_clear()


def write_spec(folder: Path, name: str, seeds: int, datasets: int, grid: bool = False) -> Path:
    """A spec of ``datasets`` × ``seeds`` no-op cells (one method); ``grid``: the datasets as one entry's ``grid``
    of noise values, else one entry each."""
    lines = ["spec: 1", f"name: {name}", "title: The engine at scale", "task: toy.guess", "datasets:"]
    noise = [f"{0.1 + d * 1e-6:.7f}" for d in range(datasets)]
    if grid:
        lines += [f"  - {{name: toy-target, id: d, grid: {{noise: [{', '.join(noise)}]}}}}"]
    else:
        lines += [f"  - {{name: toy-target, id: d{d}, params: {{noise: {value}}}}}" for d, value in enumerate(noise)]
    lines += ["methods:", "  - {name: toy-constant, kind: baseline, params: {value: 0.5}}",
              "metrics: {primary: toy_score}", f"seeds: [{', '.join(map(str, range(seeds)))}]",
              "hardware: {device: cpu, threads: 1, timeout_s: 60}"]
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(spec: Path, out: Path) -> None:
    import harness

    harness.run(spec, out, harness.RunOptions(jobs=1), progress=False)


class EngineScale:
    """``harness run --jobs 1`` of N no-op cells: a fresh run (every cell runs) and a re-run (every cell is done).

    ``grid``: the N cells as N seeds of one dataset, as N datasets of one seed written as one entry's
    ``grid`` of N values, or as N dataset entries. Issue 15 asks the first two to cost the same per cell (the
    datasets also make N rows in the pages); N entries also load, check and write an N-entry spec.
    """

    params = ([1000, 10000], ["seeds", "dataset-grid", "datasets"])
    param_names = ["cells", "grid"]
    number = 1
    repeat = (1, 3, 120.0)
    timeout = 900

    def setup_cache(self):
        _use_toy_plugin()
        root = Path(tempfile.mkdtemp(prefix="harness-engine-scale-"))
        for cells in self.params[0]:
            for grid in self.params[1]:
                shape = {"seeds": cells, "datasets": 1} if grid == "seeds" else \
                    {"seeds": 1, "datasets": cells, "grid": grid == "dataset-grid"}
                _run(write_spec(root, f"{grid}{cells}", **shape), root / "done")
        return str(root)

    def setup(self, root, cells, grid):
        _use_toy_plugin()
        self.root, self.spec = Path(root), Path(root) / f"{grid}{cells}.yaml"

    def time_fresh(self, root, cells, grid):
        _run(self.spec, Path(tempfile.mkdtemp(dir=self.root)))

    def time_rerun(self, root, cells, grid):
        _run(self.spec, self.root / "done")


class PlanGrid:
    """Planning a spec of 10,000 datasets × 1 method × 1 seed: load and check it, fingerprint the code, build
    every cell and its key (nothing runs). Linear in the datasets: was about 2 µs · N² before issue 15.
    ``time_plan``: 10,000 dataset entries; ``time_plan_grid``: one entry's ``grid`` of 10,000 values."""

    number = 1
    repeat = (1, 5, 60.0)
    timeout = 300

    def setup(self):
        _use_toy_plugin()
        folder = Path(tempfile.mkdtemp(prefix="harness-plan-grid-"))
        self.spec = write_spec(folder, "grid", seeds=1, datasets=10000)
        self.grid_spec = write_spec(folder, "dataset-grid", seeds=1, datasets=10000, grid=True)

    def time_plan(self):
        self._plan(self.spec)

    def time_plan_grid(self):
        self._plan(self.grid_spec)

    def _plan(self, path):
        from harness.plan import RunOptions, apply_options, code_fingerprints, test_cells
        from harness.spec.load import load_spec

        spec = apply_options(load_spec(path, "default"), RunOptions())
        cells = test_cells(spec, {(d.id, m.id): dict(m.params) for d in spec.datasets for m in spec.methods}, "1",
                           None, code_fingerprints(spec))
        if len({cell.key for cell in cells}) != 10000:
            raise RuntimeError("the grid's cells do not have 10,000 distinct keys")


if __name__ == "__main__":  # python benchmarks/engine_scale.py SEEDS DATASETS OUT.yaml [--grid]: the spec alone
    seeds, datasets, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    print(write_spec(out.parent, out.stem, seeds=seeds, datasets=datasets, grid="--grid" in sys.argv[4:]))
