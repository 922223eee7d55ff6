"""A sandbox for programs a model wrote: run untrusted Python source in a separate, confined process and say how
it ended.

:func:`run_python` runs the source with its standard input in a fresh temporary working directory (removed
afterwards) and an environment with nothing inherited, and returns an :class:`Outcome`: ``ok``, ``error`` (it
raised or exited non-zero), ``timeout`` (the wall clock), ``cpu-limit``, ``memory`` or ``output-limit`` (its
output passed the cap, and it was killed), with its output up to the cap and its CPU time. The harness keeps
running whatever the program does.

The layers, outermost first (``Outcome.layers`` says which held on this machine):

* **namespaces** (``unshare``, util-linux): a new network namespace (no interface but a downed loopback: no
  network) and a new process-id namespace whose first process is killed with the launcher, so every process the
  program made dies with it; a new user namespace first where the harness is not root. Where the kernel refuses
  them, the layers below still hold, and ``layers`` says ``network_namespace: false``.
* **resource limits** (``setrlimit``): CPU seconds, address space, size of a file written, processes, open files,
  no core dumps; **root dropped** to ``nobody`` where the harness runs as root and ``nobody`` can read the
  standard library (a Python installed under ``/root`` cannot be: there the program stays root, and the process
  limit does not bind root: the audit hook and the process-id namespace are what stop a fork bomb).
* **the wall clock and the output cap**, enforced from outside: the whole process group is killed.
* **an audit hook** (PEP 578) in the launcher: no sockets, no new processes or signals, no ctypes or the modules
  that reach around the hook, no file outside the working directory but the standard library's, no write outside
  the working directory.

What it does not isolate: the program can read the standard library and world-readable system files under the
Python prefix, use the CPU up to its limit and the memory up to its cap, and see the machine's CPU count and time;
the audit hook is in-process (a bug in CPython that lets code bypass it would reach the layers below, not the
harness: those are the kernel's).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

LAUNCHER = Path(__file__).with_name("sandbox_launcher.py")
STATUSES = ("ok", "error", "timeout", "cpu-limit", "memory", "output-limit")


@dataclass(frozen=True)
class Limits:
    """``cpu_s`` CPU seconds, ``wall_s`` seconds of wall clock, ``memory_bytes`` of address space,
    ``output_bytes`` of standard output (and as many of standard error; also the largest file it may write),
    ``processes`` (the process limit; the audit hook refuses new processes anyway)."""

    cpu_s: float = 2.0
    wall_s: float = 10.0
    memory_bytes: int = 512 * 2**20
    output_bytes: int = 64 * 2**10
    processes: int = 64

    def __post_init__(self) -> None:
        if not (self.cpu_s > 0 and self.wall_s > 0 and self.memory_bytes > 0 and self.output_bytes > 0
                and self.processes > 0):
            raise ValueError(f"sandbox limits must all be positive: {self}")


@dataclass
class Outcome:
    status: str
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    layers: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@lru_cache(maxsize=1)
def namespace_prefix() -> tuple[str, ...]:
    """The ``unshare`` command that gives a program its own network and process-id namespaces here, or () where
    the machine refuses them (no unshare, or namespaces disallowed): found once by trying it."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    user = () if os.geteuid() == 0 else ("--user", "--map-root-user")
    prefix = (unshare, *user, "--net", "--pid", "--fork", "--kill-child")
    try:
        done = subprocess.run([*prefix, "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ()
    return prefix if done.returncode == 0 else ()


def _world_readable(path: str) -> bool:
    """Whether ``nobody`` can read ``path``: it and every folder above it open to others (o+r, o+x)."""
    import stat

    current = Path(path).resolve()
    for part in (current, *current.parents):
        mode = part.stat().st_mode
        if not mode & stat.S_IXOTH or (part == current and not mode & stat.S_IROTH):
            return False
    return True


@lru_cache(maxsize=1)
def can_drop_root() -> bool:
    """Whether the program may run as ``nobody``: only where the harness is root and the standard library is
    readable by others (a Python under /root is not: then it stays root, confined by the other layers)."""
    return os.geteuid() == 0 and all(_world_readable(p) for p in _readable_roots())


def _readable_roots() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({paths["stdlib"], paths["platstdlib"]})


def _reader(stream, cap: int, sink: list, exceeded: threading.Event) -> None:
    total = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        if total < cap:
            sink.append(chunk[: cap - total])
        total += len(chunk)
        if total > cap:
            exceeded.set()
            return


def run_python(source: str, stdin: str = "", limits: Limits = Limits(), *, audit_hook: bool = True) -> Outcome:
    """Run ``source`` (a Python program) confined, with ``stdin`` as its standard input; see the module.
    ``audit_hook=False`` leaves the innermost layer out: only for the tests of the layers below it."""
    workdir = tempfile.mkdtemp(prefix="harness-sandbox-")
    try:
        program = Path(workdir) / "program.py"
        program.write_text(source, encoding="utf-8")
        if can_drop_root():  # the program runs as nobody: the folder must be its own to write in
            os.chown(workdir, 65534, 65534)
            os.chown(program, 65534, 65534)
        config = {"workdir": workdir, "program": str(program), "readable": _readable_roots(),
                  "cpu_s": max(1, int(round(limits.cpu_s))), "memory_bytes": int(limits.memory_bytes),
                  "file_bytes": int(limits.output_bytes), "processes": int(limits.processes), "drop_root": can_drop_root(),
                  "audit_hook": bool(audit_hook)}
        report_read, report_write = os.pipe()
        config["report_fd"] = report_write
        argv = [*namespace_prefix(), sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(config)]
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": workdir, "TMPDIR": workdir}
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   cwd=workdir, env=env, start_new_session=True, pass_fds=(report_write,))
        os.close(report_write)
        return _supervise(process, stdin, limits, started, report_read)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _supervise(process: subprocess.Popen, stdin: str, limits: Limits, started: float, report_read: int) -> Outcome:
    out, err, exceeded = [], [], threading.Event()
    readers = [threading.Thread(target=_reader, args=(process.stdout, limits.output_bytes, out, exceeded), daemon=True),
               threading.Thread(target=_reader, args=(process.stderr, limits.output_bytes, err, exceeded), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        process.stdin.write(stdin.encode("utf-8"))
        process.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    timed_out = False
    deadline = started + limits.wall_s
    while True:  # wait4, not poll: its resource usage is the program's CPU time, its children's included
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if exceeded.is_set() or time.perf_counter() > deadline:
            timed_out = not exceeded.is_set()
            _kill(process)
            _, status, usage = os.wait4(process.pid, 0)
            break
        time.sleep(0.01)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    for reader in readers:
        reader.join(timeout=5)
    cpu = usage.ru_utime + usage.ru_stime
    with os.fdopen(report_read) as channel:
        try:
            report = json.loads(channel.read() or "{}")
        except ValueError:
            report = {}
    layers = {"network_namespace": bool(namespace_prefix()) and report.get("network_interfaces", ["?"]) in ([], ["lo"]),
              "pid_namespace": bool(namespace_prefix()) and report.get("pid") == 1,
              "uid_dropped": bool(report.get("uid_dropped")), "audit_hook": bool(report.get("audit_hook"))}
    stdout = b"".join(out).decode("utf-8", "replace")
    stderr = b"".join(err).decode("utf-8", "replace")
    code = process.returncode
    if exceeded.is_set():
        state = "output-limit"
    elif timed_out:
        state = "timeout"
    elif code != 0 and cpu >= int(round(max(1.0, limits.cpu_s))):  # SIGXCPU at the soft limit, SIGKILL at the hard
        state = "cpu-limit"
    elif "MemoryError" in stderr:
        state = "memory"
    elif code == 0:
        state = "ok"
    else:
        state = "error"
    return Outcome(state, code, stdout, stderr, wall, cpu, layers)


def _kill(process: subprocess.Popen) -> None:
    """Kill the program's whole process group (unshare's --kill-child then kills the namespace's first process,
    and with it every process of the namespace)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
