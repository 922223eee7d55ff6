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


def _run_with_storage(toy_env, write_spec, tmp_path, storage: str):
    from conftest import TOY_SPEC

    return harness_cli("run", write_spec(TOY_SPEC), "--profile", "quick", "--out", tmp_path / "o", "--no-progress",
                       "--storage", storage)


def _refused(done, *words: str) -> None:
    """Exit 2, one line on stderr naming ``words``, no traceback, nothing run."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def test_storage_a_folder_is_refused_in_one_line(toy_env, write_spec, tmp_path):
    (tmp_path / "tuning").mkdir()
    _refused(_run_with_storage(toy_env, write_spec, tmp_path, str(tmp_path / "tuning")), "is a folder", "optuna.log")
    _refused(_run_with_storage(toy_env, write_spec, tmp_path, f"sqlite:///{tmp_path / 'tuning'}"), "is a folder")
    assert not (tmp_path / "o" / "toy" / "runs.jsonl").exists()


def test_storage_under_a_file_is_refused_in_one_line(toy_env, write_spec, tmp_path):
    """A path no process can create, root included (mode bits do not stop root): its folder is a file."""
    (tmp_path / "plain").write_text("x")
    _refused(_run_with_storage(toy_env, write_spec, tmp_path, str(tmp_path / "plain" / "j.log")),
             f"{tmp_path / 'plain'} is a file, not a folder")
    _refused(_run_with_storage(toy_env, write_spec, tmp_path, f"sqlite:///{tmp_path / 'plain' / 'x.db'}"),
             "is a file, not a folder")


def test_storage_a_sqlite_url_whose_folder_does_not_exist_is_refused(toy_env, write_spec, tmp_path):
    _refused(_run_with_storage(toy_env, write_spec, tmp_path, f"sqlite:///{tmp_path / 'nowhere' / 'x.db'}"),
             f"the folder {tmp_path / 'nowhere'} does not exist")


def test_storage_a_read_only_file_is_refused(tmp_path, monkeypatch):
    """Read-only is simulated: tests run as root, whom mode bits do not stop, so os.open (the journal's write
    check) and os.access (the SQLite file's) are patched to answer as for a read-only file."""
    import errno
    import os

    import pytest

    from harness import tuning

    journal, database = tmp_path / "j.log", tmp_path / "x.db"
    database.write_bytes(b"")
    real_open = os.open

    def read_only(path, flags, *rest):
        if str(path) == str(journal) and flags & os.O_WRONLY:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *rest)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(tuning.StorageError, match=r"cannot write .*j\.log \(Permission denied\); give a writable"):
        tuning.open_storage(str(journal), None)
    monkeypatch.setattr(os, "access", lambda path, mode: str(path) != str(database))
    with pytest.raises(tuning.StorageError, match=r"x\.db is read-only"):
        tuning.open_storage(f"sqlite:///{database}", None)
