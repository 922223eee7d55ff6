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
    from harness.runs_file import read_runs
    from harness.store import RunStore

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


# A full disk, simulated in the `harness` subprocess by a sitecustomize module (Python imports it at start-up from
# PYTHONPATH): ENOSPC from the N-th write of one kind on, as a full disk answers: runs.jsonl's os.write (after
# taking part of the line), Optuna's journal file or SQLite commit, or a page's temporary file.
FULL_DISK = '''
import builtins, errno, os
MODE, AFTER = os.environ["HARNESS_TEST_ENOSPC"].split(":")
AFTER = int(AFTER)
calls = [0]

def full():
    calls[0] += 1
    return calls[0] > AFTER

def enospc(path=""):
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

if MODE == "append":
    real_write = os.write
    def write(fd, data):
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            name = ""
        if name.endswith("runs.jsonl") and full():
            if calls[0] == AFTER + 1:
                real_write(fd, bytes(data)[:10])  # part of the line, then no more room
            raise enospc()
        return real_write(fd, data)
    os.write = write
elif MODE == "page":
    real_open = builtins.open
    def open_(file, mode="r", *args, **kwargs):
        if str(file).endswith(".leaderboard.html.tmp") and full():
            raise enospc(str(file))
        return real_open(file, mode, *args, **kwargs)
    builtins.open = open_
else:
    import optuna
    if MODE == "journal":
        from optuna.storages.journal import JournalFileBackend
        real = JournalFileBackend.append_logs
        def append_logs(self, logs):
            if full():
                raise enospc()
            return real(self, logs)
        JournalFileBackend.append_logs = append_logs
    else:  # sqlite: as SQLAlchemy and Optuna raise it
        import sqlite3
        import sqlalchemy.exc
        real = optuna.storages.RDBStorage.set_trial_state_values
        def set_trial_state_values(self, *args, **kwargs):
            if full():
                try:
                    raise sqlalchemy.exc.OperationalError("UPDATE trials", {}, sqlite3.OperationalError("database or disk is full"))
                except sqlalchemy.exc.OperationalError as exc:
                    raise optuna.exceptions.StorageInternalError("An exception is raised during the commit.") from exc
            return real(self, *args, **kwargs)
        optuna.storages.RDBStorage.set_trial_state_values = set_trial_state_values
'''


def _full_disk_run(tmp_path, monkeypatch, write_spec, mode: str, *extra: str):
    import os

    from conftest import TOY_SPEC

    hooks = tmp_path / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(FULL_DISK)
    spec = write_spec(TOY_SPEC)
    args = ("run", spec, "--out", tmp_path / "o", "--no-progress", "--jobs", "1", *extra)
    with monkeypatch.context() as patch:
        patch.setenv("HARNESS_TEST_ENOSPC", mode)
        patch.setenv("PYTHONPATH", os.pathsep.join([str(hooks), os.environ["PYTHONPATH"]]))
        failed = harness_cli(*args)
    return failed, lambda: harness_cli(*args)


def _one_line_exit_2(done, *words: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def _keys(folder) -> list[str]:
    lines = (folder / "runs.jsonl").read_bytes().splitlines(keepends=True)
    assert all(line.endswith(b"\n") for line in lines)
    return [json.loads(line)["key"] for line in lines]


def test_a_full_disk_while_appending_a_row_ends_in_one_line_and_a_rerun_resumes(toy_env, write_spec, tmp_path,
                                                                                monkeypatch):
    failed, again = _full_disk_run(tmp_path, monkeypatch, write_spec, "append:3")
    _one_line_exit_2(failed, "runs.jsonl: cannot write", "no space left on the device", "everything written before is kept")
    folder = tmp_path / "o" / "toy"
    assert len(_keys(folder)) == 3  # the rows before, whole; the part of the fourth cut back
    done = again()
    assert done.returncode == 0, done.stderr
    keys = _keys(folder)
    assert len(keys) == len(set(keys)) == 12  # 2 datasets × 2 methods × 3 seeds, none twice


def test_a_full_disk_in_the_optuna_journal_ends_in_one_line_and_a_rerun_resumes(toy_env, write_spec, tmp_path,
                                                                               monkeypatch):
    journal = tmp_path / "optuna.log"
    failed, again = _full_disk_run(tmp_path, monkeypatch, write_spec, "journal:20", "--storage", str(journal))
    _one_line_exit_2(failed, f"the Optuna storage {journal}: cannot write", "no space left on the device")
    done = again()
    assert done.returncode == 0, done.stderr
    keys = _keys(tmp_path / "o" / "toy")
    assert len(keys) == len(set(keys)) == 12


def test_a_full_disk_in_the_sqlite_storage_ends_in_one_line(toy_env, write_spec, tmp_path, monkeypatch):
    failed, again = _full_disk_run(tmp_path, monkeypatch, write_spec, "sqlite:3")
    _one_line_exit_2(failed, "the Optuna storage sqlite:///", "optuna.db: cannot write", "no space left on the device")
    done = again()
    assert done.returncode == 0, done.stderr
    keys = _keys(tmp_path / "o" / "toy")
    assert len(keys) == len(set(keys)) == 12


def test_a_full_disk_while_writing_the_pages_ends_in_one_line(toy_env, write_spec, tmp_path, monkeypatch):
    failed, again = _full_disk_run(tmp_path, monkeypatch, write_spec, "page:0")
    _one_line_exit_2(failed, "leaderboard.html: cannot write", "no space left on the device")
    folder = tmp_path / "o" / "toy"
    assert len(_keys(folder)) == 12 and not (folder / ".leaderboard.html.tmp").exists()
    done = again()
    assert done.returncode == 0 and "nothing new to run (12 already done)" in done.stdout, done.stdout + done.stderr
    assert (folder / "leaderboard.html").exists()
