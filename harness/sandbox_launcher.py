"""The sandbox's launcher: run as ``python -I -S sandbox_launcher.py CONFIG`` (isolated mode, no site-packages)
inside the namespaces :mod:`harness.sandbox` could create. It tightens the process, reports on the descriptor it is given which layers
took hold, and runs the untrusted Python source. Standard library only, and imports nothing of the harness.

In order: resource limits (CPU seconds, address space, file size, processes, open files, no core dumps); dropping
root to ``nobody`` (where it runs as root: then the process limit counts and root's files are out of reach for
writing); the working directory; an audit hook (PEP 578) that refuses what a test program never needs: sockets,
new processes and signals, ctypes and the modules that reach around the hook, files outside the working directory
and the standard library, writes outside the working directory. The hook is the last layer, not the only one:
where the kernel allows, the network and process-id namespaces hold without it.
"""
import json
import os
import resource
import sys

CONFIG = json.loads(sys.argv[1])
WORKDIR = os.path.realpath(CONFIG["workdir"])
READABLE = tuple(os.path.realpath(p) + os.sep for p in CONFIG["readable"])  # the standard library's folders
BLOCKED_MODULES = frozenset({"ctypes", "_ctypes", "_posixsubprocess", "socket", "_socket", "ssl", "_ssl", "mmap",
                             "multiprocessing", "_multiprocessing", "subprocess", "pty", "fcntl", "resource",
                             "signal", "_signal", "asyncio", "select", "selectors", "_posixshmem", "cffi"})
BLOCKED_EVENTS = frozenset({"os.fork", "os.forkpty", "os.kill", "os.killpg", "os.system", "os.exec", "os.posix_spawn",
                            "os.spawn", "os.startfile", "subprocess.Popen", "os.setuid", "os.setgid",
                            "os.chroot", "os.symlink", "os.link", "os.chmod", "os.chown", "socket.__new__",
                            "socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo",
                            "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "sys.addaudithook", "os.putenv",
                            "os.unsetenv"})
PATH_EVENTS = {"os.remove": 0, "os.rename": 0, "os.rmdir": 0, "os.mkdir": 0, "os.listdir": 0, "os.scandir": 0,
               "os.truncate": 0, "os.utime": 0, "shutil.rmtree": 0, "os.chdir": 0}


def _limits() -> None:
    cpu = int(CONFIG["cpu_s"])
    for name, soft, hard in (("RLIMIT_CPU", cpu, cpu + 1), ("RLIMIT_AS", CONFIG["memory_bytes"], None),
                             ("RLIMIT_FSIZE", CONFIG["file_bytes"], None), ("RLIMIT_NOFILE", 32, None),
                             ("RLIMIT_CORE", 0, None), ("RLIMIT_NPROC", CONFIG["processes"], None)):
        resource.setrlimit(getattr(resource, name), (soft, soft if hard is None else hard))


def _drop_root() -> bool:
    if os.getuid() != 0 or not CONFIG["drop_root"]:
        return False
    try:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    except OSError:  # inside a user namespace whose map has no "nobody"
        return False
    return True


def _inside(path: str, roots) -> bool:
    real = os.path.realpath(os.path.join(WORKDIR, os.fsdecode(path)))
    return any((real + os.sep).startswith(root) for root in roots)


def _hook(event: str, args) -> None:
    if event in BLOCKED_EVENTS:
        raise PermissionError(f"sandbox: {event} is not allowed")
    if event == "import" and args and str(args[0]).split(".")[0] in BLOCKED_MODULES:
        raise PermissionError(f"sandbox: importing {args[0]} is not allowed")
    if event == "open":
        path, mode, flags = args[0], args[1] or "r", args[2] or 0
        if isinstance(path, int):
            return  # an already open descriptor
        writing = any(c in str(mode) for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        allowed = (WORKDIR + os.sep,) if writing else (WORKDIR + os.sep, *READABLE)
        if not _inside(path, allowed):
            raise PermissionError(f"sandbox: opening {path!r} ({'write' if writing else 'read'}) is not allowed")
    if event in PATH_EVENTS and args and isinstance(args[0], (str, bytes, os.PathLike)):
        listing = event in ("os.listdir", "os.scandir")  # the import system lists the standard library's folders
        if not _inside(args[0], (WORKDIR + os.sep, *READABLE) if listing else (WORKDIR + os.sep,)):
            raise PermissionError(f"sandbox: {event} outside the working directory is not allowed")


def _interfaces() -> list:
    """The network interfaces this process's network namespace has (/proc/net/dev is per namespace)."""
    try:
        lines = open("/proc/self/net/dev", encoding="ascii").read().splitlines()[2:]
    except OSError:
        return ["?"]
    return sorted(line.split(":")[0].strip() for line in lines)


def main() -> None:
    _limits()
    dropped = _drop_root()
    os.chdir(WORKDIR)
    report = {"uid_dropped": dropped, "uid": os.getuid(), "pid": os.getpid(), "network_interfaces": _interfaces(),
              "audit_hook": bool(CONFIG["audit_hook"])}
    with os.fdopen(CONFIG["report_fd"], "w") as channel:
        channel.write(json.dumps(report))
    source = open(CONFIG["program"], encoding="utf-8").read()
    code = compile(source, "<program>", "exec")
    sys.argv = ["<program>"]
    sys.path = [p for p in sys.path if p]  # no working directory on the path
    if CONFIG["audit_hook"]:
        sys.addaudithook(_hook)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(code, namespace)


if __name__ == "__main__":
    main()
