"""The sandbox against the escapes a hostile program tries: each is contained, recorded as a failed run, and the
harness keeps running. Which layer held is checked where this machine has it (the namespaces, root dropped) and
reported by the outcome otherwise."""
from __future__ import annotations

import os
import socket
import textwrap
import threading
from pathlib import Path

import pytest

from harness import sandbox
from harness.sandbox import Limits, run_python

ROOT = Path(__file__).resolve().parents[1]
FAST = Limits(cpu_s=1, wall_s=60, memory_bytes=256 * 2**20, output_bytes=4096)


def run(source: str, stdin: str = "", limits: Limits = FAST):
    return run_python(textwrap.dedent(source), stdin, limits)


def test_a_program_reads_its_input_and_prints():
    outcome = run("import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))", "1 2 3")
    assert outcome.status == "ok" and outcome.stdout == "6\n" and outcome.returncode == 0
    assert outcome.layers["audit_hook"]


def test_an_exception_is_an_error_with_its_traceback():
    outcome = run("raise ValueError('no')")
    assert outcome.status == "error" and "ValueError: no" in outcome.stderr


def test_an_infinite_loop_hits_the_cpu_limit():
    outcome = run("while True:\n    pass")
    assert outcome.status == "cpu-limit", outcome
    assert outcome.cpu_s >= 0.9


def test_a_sleeping_program_hits_the_wall_clock():
    outcome = run("import time\ntime.sleep(600)", limits=Limits(cpu_s=5, wall_s=1.5))
    assert outcome.status == "timeout", outcome


def test_allocating_too_much_memory_is_stopped():
    outcome = run("x = bytearray(2 * 1024**3)\nprint('allocated')")
    assert outcome.status == "memory", outcome
    assert "allocated" not in outcome.stdout


def test_printing_gigabytes_stops_at_the_output_cap():
    outcome = run("line = 'x' * 100000\nwhile True:\n    print(line)", limits=Limits(cpu_s=30, wall_s=60,
                                                                                 output_bytes=4096))
    assert outcome.status == "output-limit", outcome
    assert len(outcome.stdout) == 4096


@pytest.mark.parametrize("attempt", [
    "import os\nwhile True:\n    os.fork()",
    "import subprocess\nsubprocess.Popen(['sh', '-c', ':(){ :|:& };:'])",
    "import os\nos.system('sleep 100 &')",
    "import os\nos.posix_spawn('/bin/sh', ['sh'], {})",
])
def test_a_fork_bomb_or_any_new_process_is_refused(attempt):
    outcome = run(attempt)
    assert outcome.status == "error" and "not allowed" in outcome.stderr, outcome


def test_writing_outside_the_working_directory_is_refused(tmp_path):
    target = tmp_path / "escaped.txt"
    outcome = run(f"open({str(target)!r}, 'w').write('x')")
    assert outcome.status == "error" and "not allowed" in outcome.stderr
    assert not target.exists()
    inside = run("open('mine.txt', 'w').write('x')\nprint(open('mine.txt').read())")
    assert inside.status == "ok" and inside.stdout == "x\n"


def test_the_working_directory_is_fresh_and_removed_afterwards():
    outcome = run("import os\nprint(os.getcwd())\nprint(sorted(os.listdir('.')))")
    folder, listing = outcome.stdout.splitlines()
    assert listing == "['program.py']"
    assert not Path(folder).exists()


def test_reading_the_harness_files_is_refused():
    outcome = run(f"print(open({str(ROOT / 'harness' / 'sandbox.py')!r}).read()[:20])")
    assert outcome.status == "error" and "not allowed" in outcome.stderr
    listing = run(f"import os\nprint(os.listdir({str(ROOT)!r}))")
    assert listing.status == "error" and "not allowed" in listing.stderr


def test_opening_a_socket_reaches_nothing():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    accepted = []

    def accept():
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    waiter = threading.Thread(target=accept)
    waiter.start()
    outcome = run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'x')")
    waiter.join()
    server.close()
    assert outcome.status == "error" and not accepted
    # the hook refuses the import; where the namespace held, the network is gone below it too
    assert "not allowed" in outcome.stderr


def _needs_namespaces():
    if not sandbox.namespace_prefix():
        pytest.skip("this machine refuses network and process-id namespaces: the audit hook alone holds here")


def test_the_network_namespace_holds_without_the_hook():
    _needs_namespaces()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    outcome = run_python(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)", "", FAST,
                         audit_hook=False)
    with pytest.raises(OSError, match="timed out"):  # nobody came
        server.accept()
    server.close()
    assert outcome.status == "error" and "unreachable" in outcome.stderr.lower(), outcome.stderr
    assert outcome.layers["network_namespace"] and not outcome.layers["audit_hook"]


def test_the_process_namespace_hides_the_harness_without_the_hook():
    _needs_namespaces()
    me = os.getpid()
    outcome = run_python(f"import os\nprint(os.getpid(), os.getppid())\nos.kill({me}, 0)", "", FAST, audit_hook=False)
    assert outcome.stdout.split() == ["1", "0"]  # the program is the namespace's first process; no parent in sight
    assert outcome.status == "error" and "ProcessLookupError" in outcome.stderr
    assert outcome.layers["pid_namespace"]


def test_signalling_the_parent_is_refused_and_the_harness_keeps_running():
    me = os.getpid()
    outcome = run(f"import os, signal\nos.kill({me}, signal.SIGKILL)")
    assert outcome.status == "error" and "not allowed" in outcome.stderr
    parent = run("import os\nos.kill(os.getppid(), 9)")
    assert parent.status == "error"
    assert os.getpid() == me  # still here


def test_nothing_of_the_environment_is_inherited(monkeypatch):
    monkeypatch.setenv("HARNESS_SECRET", "s3cret")
    outcome = run("import os\nprint(sorted(os.environ))")
    assert outcome.status == "ok" and "HARNESS_SECRET" not in outcome.stdout
    assert "s3cret" not in outcome.stdout


def test_reaching_around_the_hook_is_refused():
    for attempt in ("import ctypes", "import _posixsubprocess", "import os\nos.chdir('/')",
                    "import sys\nsys.addaudithook(lambda *a: None)\nimport socket",  # a new hook removes none
                    "import sys\nsys.modules['posix'].fork()"):
        outcome = run(attempt)
        assert outcome.status == "error" and "not allowed" in outcome.stderr, attempt


def test_the_standard_library_still_works():
    outcome = run("""
        import collections, itertools, math, heapq, functools, re, json
        Point = collections.namedtuple('Point', 'x y')
        print(Point(1, 2).x + math.isqrt(16), json.dumps(sorted(heapq.nsmallest(2, [3, 1, 2]))))
    """)
    assert outcome.status == "ok", outcome.stderr
    assert outcome.stdout == "5 [1, 2]\n"


def test_limits_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        Limits(cpu_s=0)
