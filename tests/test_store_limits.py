"""What the store refuses or keeps (issue 26, items 3, 4 and 11): a full disk ends a command in one line with exit 2
and keeps what was written; --storage that cannot be a storage is refused before any work; `harness repair` moves a
line a crash cut in half to damaged.jsonl, as it does every other damaged line."""
from __future__ import annotations

import json

from conftest import harness_cli


def _row(key: str) -> bytes:
    return (json.dumps({"key": key, "status": "ok", "dataset": "d", "method": "m", "seed": 0, "split": "test"})
            + "\n").encode()


def test_repair_moves_a_torn_last_line_to_damaged_byte_for_byte(tmp_path):
    """It was cut off and lost, silently, when repair took the folder's lock."""
    folder = tmp_path / "spec"
    folder.mkdir()
    torn = b'{"key": "b", "status": "ok", "dataset": "d", "me'
    (folder / "runs.jsonl").write_bytes(_row("a") + b"not json\n" + _row("c") + torn)
    done = harness_cli("repair", folder)
    assert done.returncode == 0, done.stderr
    assert "moved 2 damaged line(s) (line 2, 4)" in done.stdout, done.stdout
    assert (folder / "runs.jsonl").read_bytes() == _row("a") + _row("c")
    assert (folder / "damaged.jsonl").read_bytes() == b"not json\n" + torn + b"\n"


def test_a_run_still_cuts_a_torn_last_line_before_its_first_append(tmp_path):
    from harness.store import RunStore, read_runs

    folder = tmp_path / "spec"
    folder.mkdir()
    (folder / "runs.jsonl").write_bytes(_row("a") + b'{"key": "b", "sta')
    with RunStore(folder) as store:
        assert [r["key"] for r in read_runs(folder)] == ["a"]
        store.append(json.loads(_row("c")))
    assert (folder / "runs.jsonl").read_bytes() == _row("a") + _row("c")
    assert not (folder / "damaged.jsonl").exists()
