"""Cells run in reused worker processes; timeouts kill, failures are captured, the run goes on."""
from __future__ import annotations

import time

import pytest

from harness.execute import execute_cell
from harness.executors import LocalExecutor as WorkerPool


def cell(method: str, params=None, timeout_s: float = 20.0, seed: int = 0, dataset="toy-target", data_dir=None):
    return {"task": "toy.guess", "dataset_id": "d", "dataset_name": dataset, "dataset_params": {},
            "method_name": method, "params": params or {}, "seed": seed, "split": "test", "device": "auto",
            "threads": 1, "timeout_s": timeout_s, "data_dir": data_dir}


def test_ok_cell_records_metrics_and_provenance(toy_env):
    result = execute_cell(cell("toy-constant", {"value": 0.5}))
    assert result["status"] == "ok", result
    assert set(result["metrics"]) == {"toy_score", "toy_loss", "runtime_s"}
    assert result["device"].startswith("cpu") and result["peak_mib"] > 0 and result["wall_s"] >= 0
    # how busy the machine was when the cell ended: a timing read beside it can be judged
    assert len(result["load_average"]) == 3 and all(v >= 0 for v in result["load_average"])
    assert isinstance(result["cores"], int) and result["cores"] >= 1


def test_exception_and_nan_are_failures_with_their_message(toy_env):
    raised = execute_cell(cell("toy-raise", {"message": "bad input shape"}))
    assert raised["status"] == "failed" and raised["error"] == "RuntimeError: bad input shape"
    assert "Traceback" in raised["traceback"]
    nan = execute_cell(cell("toy-nan"))
    assert nan["status"] == "failed" and "'toy_score' is nan" in nan["error"]


def test_missing_data_is_skipped_not_failed(toy_env, tmp_path):
    skipped = execute_cell(cell("toy-constant", dataset="toy-local", data_dir=str(tmp_path)))
    assert skipped["status"] == "skipped" and "target.txt not found" in skipped["error"]
    (tmp_path / "target.txt").write_text("0.25")
    found = execute_cell(cell("toy-constant", {"value": 0.25}, dataset="toy-local", data_dir=str(tmp_path)))
    assert found["status"] == "ok" and found["metrics"]["toy_loss"] == 0.0


def test_same_seed_same_data_for_every_method(toy_env):
    a = execute_cell(cell("toy-constant", {"value": 0.0}, seed=3))
    b = execute_cell(cell("toy-constant", {"value": 0.0}, seed=3))
    c = execute_cell(cell("toy-constant", {"value": 0.0}, seed=4))
    assert a["metrics"]["toy_loss"] == b["metrics"]["toy_loss"] != c["metrics"]["toy_loss"]


def test_pool_kills_timeouts_survives_crashes_and_keeps_going(toy_env):
    cells = [
        ("slow", cell("toy-sleep", {"seconds": 120.0}, timeout_s=2.0)),
        ("crash", cell("toy-crash")),
        ("raise", cell("toy-raise")),
        ("ok", cell("toy-constant")),
    ]
    started = time.monotonic()
    with WorkerPool(jobs=1) as pool:
        results = dict(pool.run(cells))
    assert time.monotonic() - started < 90  # the 120 s sleep was killed, not waited for (however busy the machine)
    assert results["slow"]["status"] == "timed-out" and "2 s timeout" in results["slow"]["error"]
    assert results["crash"]["status"] == "failed" and "worker process died (exit code 3)" in results["crash"]["error"]
    assert results["raise"]["status"] == "failed"
    assert results["ok"]["status"] == "ok"


@pytest.mark.long
def test_the_timeout_counts_from_when_the_method_is_called_not_from_the_worker_s_start_up(toy_env):
    """A cell's timeout (2 s) starts when its worker begins the timed part: after the worker process started and
    the cell's task, loader and method modules are imported (toy-slow-import's module sleeps 3 s when imported),
    for a worker's first cell and for a later cell of a method it has not run before. Nothing here depends on the
    machine's speed: a toy cell takes milliseconds, and a 60 s sleep is killed however busy the machine is."""
    cells = [("quick", cell("toy-constant", timeout_s=2.0)),
             ("slow-import", cell("toy-slow-import", timeout_s=2.0)),  # a later cell: 3 s of import, then at once
             ("sleeps", cell("toy-sleep", {"seconds": 60.0}, timeout_s=2.0)),
             ("slow-import-sleeps", cell("toy-slow-import-sleep", {"seconds": 60.0}, timeout_s=2.0)),  # a new worker
             ("after", cell("toy-slow-import", timeout_s=2.0))]  # the first cell of a third worker
    started = time.monotonic()
    with WorkerPool(jobs=1) as pool:
        results = dict(pool.run(cells))
    assert time.monotonic() - started < 100  # both 60 s sleeps were killed
    for tag in ("quick", "slow-import", "after"):
        assert results[tag]["status"] == "ok", (tag, results[tag])
        assert results[tag]["wall_s"] < 2.0, (tag, results[tag])  # wall_s counts what the timeout counts
    for tag in ("sleeps", "slow-import-sleeps"):  # a cell that runs too long is still killed
        assert results[tag]["status"] == "timed-out", (tag, results[tag])
        assert results[tag]["error"] == "killed after the 2 s timeout" and 2.0 <= results[tag]["wall_s"] < 60
    assert results["slow-import-sleeps"]["error"] == "killed after the 2 s timeout"


def test_a_worker_stuck_in_its_start_up_is_killed_after_the_start_up_limit(toy_env, monkeypatch):
    """A worker that never begins its cell (its method's module imports for 60 s) is killed after the start-up limit
    (STARTUP_LIMIT_S, here 4 s, or the cell's timeout if longer), its cell timed-out, and the pool goes on."""
    import harness.executors

    monkeypatch.setattr(harness.executors, "STARTUP_LIMIT_S", 4.0)
    monkeypatch.setenv("HARNESS_TOY_IMPORT_S", "60")
    started = time.monotonic()
    with WorkerPool(jobs=1) as pool:
        results = dict(pool.run([("stuck", cell("toy-slow-import", timeout_s=1.0)),
                                 ("after", cell("toy-constant", timeout_s=20.0))]))
    assert time.monotonic() - started < 50
    assert results["stuck"]["status"] == "timed-out" and results["stuck"]["wall_s"] == 0.0
    assert results["stuck"]["error"] == ("killed after 4 s of start-up (the worker process, the imports of the task, "
                                         "loader and method) without beginning the cell")
    assert results["after"]["status"] == "ok", results["after"]


def test_workers_are_reused(toy_env, monkeypatch):
    spawned = []
    original = WorkerPool._spawn

    def counting_spawn(self, slot):
        spawned.append(slot)
        return original(self, slot)

    monkeypatch.setattr(WorkerPool, "_spawn", counting_spawn)
    with WorkerPool(jobs=2) as pool:
        results = list(pool.run([(i, cell("toy-constant")) for i in range(6)]))
    assert len(results) == 6 and spawned == [0, 1]


def test_cuda_request_without_a_gpu_is_a_clear_skip(monkeypatch, toy_env):
    import pytest

    from harness.frameworks import Framework, TorchFramework
    from harness.hardware import DeviceUnavailable

    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert TorchFramework().resolve_device("auto")[0] == "cpu"
    assert Framework().resolve_device("cuda")[0] == "cpu"  # numpy tasks run on the CPU
    with pytest.raises(DeviceUnavailable, match="no CUDA device is visible"):
        TorchFramework().resolve_device("cuda")
    skipped = execute_cell({**cell("toy-constant"), "device": "cuda"})
    assert skipped["status"] == "ok"  # the toy task has no framework: it runs on the CPU


def test_each_worker_is_pinned_to_its_own_gpu(toy_env):
    """--jobs N over N GPUs: worker i sees only GPU i, the same one for all its cells."""
    cells = [(f"{g}{i}", {**cell("toy-sleep", {"seconds": 0.3}), "group": g}) for g in "ab" for i in range(2)]
    with WorkerPool(jobs=2, gpus=["3", "5"]) as pool:
        results = dict(pool.run(cells))
    seen = {g: {results[f"{g}{i}"]["visible_gpus"] for i in range(2)} for g in "ab"}
    assert sorted(v for s in seen.values() for v in s) == ["3", "5"], seen  # one GPU per worker, never shared
    with WorkerPool(jobs=1) as pool:
        (_, unpinned), = pool.run([("x", cell("toy-constant"))])
    import os
    assert unpinned["visible_gpus"] == os.environ.get("CUDA_VISIBLE_DEVICES")  # no pinning without GPUs


def test_peak_gpu_memory_is_reset_for_every_cell(monkeypatch):
    """The peak reported for a cell is that cell's, not the worst of the worker's earlier cells."""
    import pytest

    torch = pytest.importorskip("torch")
    from harness.frameworks import TorchFramework

    peak = {"value": 0.0}
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: peak.update(value=0.0))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: peak["value"])
    framework = TorchFramework()
    peak["value"] = 512 * 2**20  # a big earlier cell
    framework.reset_peak_memory("cuda")
    peak["value"] = max(peak["value"], 3 * 2**20)  # this cell allocates 3 MiB
    assert framework.peak_memory_mib("cuda") == 3.0
    assert framework.peak_memory_mib("cpu") is None


def test_cells_of_one_group_stay_on_one_worker(toy_env):
    """A task may cache a seed × method's training in the worker: its cells are not spread out."""
    cells = [(f"{g}{i}", {**cell("toy-sleep", {"seconds": 0.5}), "group": g}) for g in "ab" for i in range(3)]
    with WorkerPool(jobs=2) as pool:
        results = dict(pool.run(cells))
    for group in "ab":
        assert len({results[f"{group}{i}"]["pid"] for i in range(3)}) == 1, group
    assert results["a0"]["pid"] != results["b0"]["pid"]


def test_worker_cache_builds_once_and_evicts_the_least_recently_used():
    from harness.tasks.base import WorkerCache

    built = []
    cache = WorkerCache(2)
    build = lambda key: (lambda: built.append(key) or key.upper())  # noqa: E731
    assert cache.get_or_build("a", build("a")) == "A"
    cache.get_or_build("b", build("b"))
    assert cache.get_or_build("a", build("a")) == "A" and built == ["a", "b"]  # a hit, and now the newest
    cache.get_or_build("c", build("c"))  # evicts b, the least recently used
    assert "a" in cache and "b" not in cache and "c" in cache


def _children(pid: int) -> set[int]:
    from pathlib import Path

    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(p) for p in (task / "children").read_text().split()}
    return found


def _gone(pid: int, within: float) -> bool:
    import os

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(")")[-1].split()[0] == "Z":  # a zombie has stopped running
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


import pytest  # noqa: E402


@pytest.mark.parametrize("signame, code", [("SIGTERM", 143), ("SIGKILL", -9)])
def test_a_stopped_run_leaves_no_worker_computing(toy_env, write_spec, tmp_path, signame, code):
    """SIGTERM is handled as Ctrl-C (exit 143, the workers stopped); a SIGKILL'd run's workers are killed by the
    kernel (PR_SET_PDEATHSIG). Before, both left the worker in its cell until it finished."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    if not Path("/proc/self/task").exists():
        pytest.skip("needs Linux /proc to find the workers")
    from conftest import ROOT, TOY_SPEC

    spec = write_spec(TOY_SPEC.replace("- {name: toy-constant", "- {name: toy-sleep, kind: baseline, params: {seconds: 60}}\n  "
                                       "- {name: toy-constant"), stem="toy")
    run = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", str(spec), "--out", str(tmp_path / "o"),
                            "--no-progress", "--jobs", "1", "--methods", "toy-sleep"], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while time.monotonic() < deadline and not workers:
        workers = {p for p in _children(run.pid) if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()}
        time.sleep(0.2)
    assert workers, "no worker started"
    time.sleep(2.0)  # the worker is inside its 60-second cell
    os.kill(run.pid, getattr(signal, signame))
    _, stderr = run.communicate(timeout=30)
    assert run.returncode == code, stderr
    if signame == "SIGTERM":
        assert "terminated; finished cells are saved" in stderr
    assert all(_gone(pid, within=10) for pid in workers)


def test_workers_hash_strings_the_same_way_in_every_run(toy_env, monkeypatch):
    """The pool's workers run with a fixed PYTHONHASHSEED (0 unless the user set one), so a set of strings
    iterates in the same order in every run."""
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    pool = WorkerPool(jobs=1, threads=1)
    assert pool._environment(0)["PYTHONHASHSEED"] == "0"
    monkeypatch.setenv("PYTHONHASHSEED", "123")
    assert pool._environment(0)["PYTHONHASHSEED"] == "123"


def test_a_worker_holds_one_cell_ahead_and_a_lost_worker_s_cell_ahead_runs_once(toy_env, tmp_path, monkeypatch):
    """The next cell waits in the worker's pipe while the parent records; when the worker is killed for a
    timeout, the cell it held ahead goes back to the queue unrun, and runs once on the replacement."""
    counter = tmp_path / "calls"
    monkeypatch.setenv("HARNESS_TOY_STOP", f"{counter}:0:SIGINT")  # count every call, stop none
    cells = [("slow", cell("toy-sleep", {"seconds": 120.0}, timeout_s=2.0))]
    cells += [(f"counted-{i}", cell("toy-stop", {"x": 0.3}, seed=i)) for i in range(3)]
    with WorkerPool(jobs=1) as pool:
        for tag, payload in cells:
            pool.submit(tag, payload)
        pool._dispatch()
        (worker,) = pool._workers
        assert [item[0] for item in worker.queue] == ["slow", "counted-0"]  # one running, one ahead
        results = {}
        while pool.outstanding:
            results.update(pool.wait())
    assert results["slow"]["status"] == "timed-out"
    assert all(results[f"counted-{i}"]["status"] == "ok" for i in range(3)), results
    assert int(counter.read_text()) == 3  # the cell held ahead ran once, after the kill


def test_a_worker_keeps_its_group_and_others_take_groups_nobody_holds():
    """The choice of a worker's next cell (no process is started): its own group first, then the oldest group
    no other worker holds, and only when every group left is held, any (a worker never idles)."""
    from harness.executors import _Worker

    pool = WorkerPool(jobs=2)
    for i in range(12):  # g0, g1, g2, g0, g1, ...: four cells each
        pool.submit((f"g{i % 3}", i), {"group": f"g{i % 3}", "timeout_s": 1})
    a, b = _Worker(None, None, 0), _Worker(None, None, 1)
    pool._workers = [a, b]

    def take(worker):
        tag, cell = pool._take(worker)
        worker.group = cell["group"]
        return tag

    assert [take(a), take(b), take(a), take(b)] == [("g0", 0), ("g1", 1), ("g0", 3), ("g1", 4)]
    assert [take(a), take(a)] == [("g0", 6), ("g0", 9)]  # its own group to the end
    assert take(a) == ("g2", 2)  # then the oldest group b does not hold
    assert [take(b), take(b)] == [("g1", 7), ("g1", 10)]
    assert take(b) == ("g2", 5)  # every group left is held (by a): b takes from it rather than idle
    assert pool.outstanding == 2


def test_each_cell_s_peak_memory_is_its_own():
    """The peak read for a cell is reset before it (Linux's VmHWM through /proc, read through descriptors kept
    open): a cell that follows a 300 MiB one does not report 300 MiB."""
    import sys

    import pytest

    from harness.execute import _peak_rss

    if not sys.platform.startswith("linux"):
        pytest.skip("the per-cell peak is Linux's VmHWM")
    assert _peak_rss.reset()
    big = b"\x01" * (300 * 2**20)  # written, so resident
    high = _peak_rss.mib()
    del big
    assert _peak_rss.reset()
    low = _peak_rss.mib()
    assert high - low > 250, (high, low)
    again = b"\x01" * (100 * 2**20)
    assert _peak_rss.mib() - low > 80  # read afresh each time, not once
    del again
