"""Warm starts: verify's runs fork from a process that has already imported TensorFlow.

A run of a short script is mostly TensorFlow's import (about 6 s of CPU on 2
cores, where the script itself takes 1-3 s), paid twice per verify. A *warm
process* is the runner's own child interpreter stopped just before the script:
it has imported TensorFlow and the runner, and forks a copy of itself for each
run. The copy is what a cold child would be at that point, because the runner
imports TensorFlow before the script in every run that uses this (legacy runs,
seeded or aligned runs, and captured runs, whose hooks install on TensorFlow's
import):

- the environment: one warm process per environment, as far as the
  variables read while Python starts and NumPy and TensorFlow are imported go
  (:data:`START_VARIABLES`); the copy then takes the run's whole environment;
- the working directory, ``sys.argv``, stdin (``/dev/null``), stdout and
  stderr (the run's own pipes, passed over a Unix socket), its own session;
- NumPy's global generator is reseeded from the OS, as a fresh import seeds it;
  Python's ``random`` reseeds itself after a fork; ``--seed`` seeds both after;
- exit: the exit code, the traceback of an uncaught exception, ``atexit``
  handlers and non-daemon threads as the interpreter's own shutdown.

What is shared: the string-hash salt (``PYTHONHASHSEED``), fixed when an
interpreter starts. Runs forked from one warm process iterate sets of strings in
one order. ``verify --seed`` sets the salt anyway; ``--legacy-runs``, which
measures how legacy runs differ, starts its runs cold unless the salt is set.

``TAPESHIFT_COLD_START=1`` (or ``warm=False`` in the Python API) starts every
run cold. Where a warm process cannot start (TensorFlow missing, no ``fork``),
runs start cold.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from typing import Sequence

from tapeshift.migrate.legacy.bootstrap import child_source

#: set to "1" to start every run in a fresh interpreter
COLD_SWITCH = "TAPESHIFT_COLD_START"

#: variables Python, NumPy (OpenBLAS) and TensorFlow read while starting: two
#: environments that agree on these share a warm process
START_VARIABLES = ("PYTHON", "TF_", "TPU_", "XLA_", "CUDA", "NVIDIA", "LD_", "DYLD_", "OMP_",
                   "KMP_", "MKL", "OPENBLAS", "GOTO", "BLIS", "NUMPY", "NPY_", "KERAS", "MPL",
                   "HOME", "TMP", "LANG", "LC_", "PATH")

#: how long a warm process may take to import TensorFlow before runs start cold
READY_TIMEOUT = 300.0

#: warm processes kept at once (each holds about 600 MB): a new environment's
#: replaces the one used longest ago that runs nothing
MAX_SERVERS = 2


def enabled() -> bool:
    return os.environ.get(COLD_SWITCH, "") not in ("1", "true", "True") and hasattr(os, "fork") \
        and hasattr(socket, "send_fds")


def start(cmd: Sequence[str], *, cwd, env: dict | None) -> WarmProcess | None:
    """Start the runner command ``cmd`` (``runner_command``'s) as a fork of a warm process,
    or return None where none can serve it (then the caller starts it cold)."""
    if not enabled() or len(cmd) < 4 or cmd[1] != "-c" or os.path.realpath(cmd[0]) != \
            os.path.realpath(sys.executable):
        return None
    env = dict(os.environ if env is None else env)
    server = _server_for(env)
    if server is None:
        return None
    return server.run(list(cmd[3:]), os.path.abspath(os.fspath(cwd or os.getcwd())), env)


# -- this side: the warm processes and their runs ----------------------------

class WarmProcess:
    """What :mod:`verify` uses of ``subprocess.Popen``, for a run forked by a warm process."""

    def __init__(self, args: list[str], stdout, stderr) -> None:
        self.args = args
        self.stdout = stdout
        self.stderr = stderr
        self.pid: int | None = None
        self.returncode: int | None = None
        self._started = threading.Event()
        self._done = threading.Event()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.pid is not None and self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def _finish(self, returncode: int) -> None:
        self.returncode = returncode
        self._started.set()
        self._done.set()


class _Server:
    """One warm process: requests go out over a SOCK_SEQPACKET pair, with the
    run's stdout and stderr; its pid and, later, its exit code come back."""

    def __init__(self, env: dict) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.lock = threading.Lock()
        self.runs: dict[int, WarmProcess] = {}
        self.next_id = 0
        self.alive = True
        source = child_source("tapeshift.migrate.legacy.warm", "serve", "serve(int(sys.argv[1]))")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", source, str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=env, start_new_session=True)
        theirs.close()
        ready, _, _ = select.select([ours], [], [], READY_TIMEOUT)
        message = ours.recv(1 << 16) if ready else b""
        if message != b'{"ready": true}':
            self.close()
            raise OSError("the warm process did not start")
        threading.Thread(target=self._read, daemon=True, name="tapeshift-warm").start()

    def run(self, argv: list[str], cwd: str, env: dict) -> WarmProcess | None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        proc = WarmProcess(argv, os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb"))
        try:
            with self.lock:
                if not self.alive:
                    raise OSError("the warm process has gone")
                rid = self.next_id
                self.next_id += 1
                self.runs[rid] = proc
                request = json.dumps({"id": rid, "argv": argv, "cwd": cwd, "env": env})
                socket.send_fds(self.sock, [request.encode()], [out_w, err_w])
        except OSError:
            proc.stdout.close()
            proc.stderr.close()
            return None
        finally:
            os.close(out_w)
            os.close(err_w)
        proc._started.wait()
        if proc.pid is None:  # the warm process died before it forked the run
            proc.stdout.close()
            proc.stderr.close()
            return None
        return proc

    def _read(self) -> None:
        while True:
            try:
                message = self.sock.recv(1 << 16)
            except OSError:
                message = b""
            if not message:
                break
            reply = json.loads(message)
            with self.lock:
                proc = self.runs.get(reply["id"])
                if proc is None:
                    continue
                if "pid" in reply:
                    proc.pid = reply["pid"]
                    proc._started.set()
                else:
                    del self.runs[reply["id"]]
                    proc._finish(reply["returncode"])
        with self.lock:  # the warm process died: the exit codes of its runs are lost
            self.alive = False
            for proc in self.runs.values():
                if proc.pid is not None:  # stopped, not left running unwatched
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
                proc._finish(-signal.SIGKILL)
            self.runs.clear()

    def close(self) -> None:
        self.alive = False
        try:
            self.sock.close()  # the warm process reads the end and exits
        finally:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_servers: dict[tuple, _Server | None] = {}
_servers_lock = threading.Lock()


def _key(env: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in env.items() if k.startswith(START_VARIABLES)))


def _server_for(env: dict) -> _Server | None:
    key = _key(env)
    with _servers_lock:
        if key not in _servers:
            live = [k for k, s in _servers.items() if s is not None]
            for old in live[:max(0, len(live) - MAX_SERVERS + 1)]:
                if not _servers[old].runs:  # type: ignore[union-attr]
                    _servers.pop(old).close()  # type: ignore[union-attr]
            try:
                _servers[key] = _Server(env)
            except OSError:
                _servers[key] = None  # cold from now on, for this environment
        server = _servers.pop(key)
        _servers[key] = server  # the last used goes last
    return server if server is not None and server.alive else None


@atexit.register
def close_all() -> None:
    """Stop every warm process (they also stop when this process dies)."""
    with _servers_lock:
        servers = [s for s in _servers.values() if s is not None]
        _servers.clear()
    for server in servers:
        server.close()


# -- the other side: the warm process ------------------------------------------

def serve(fd: int) -> None:
    """The warm process: import what every run imports first, then fork a run per request."""
    sock = socket.socket(fileno=fd)
    try:
        import tensorflow  # noqa: F401 - the import the runs skip

        from tapeshift.migrate.legacy.capture import main
    except BaseException:
        os._exit(1)
    sock.send(b'{"ready": true}')
    children: dict[int, int] = {}  # pid -> request id
    while True:
        ready, _, _ = select.select([sock], [], [], 0.02 if children else None)
        if ready:
            try:
                message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2)
            except OSError:
                message, fds = b"", []
            if not message:  # the parent has gone: so do we
                os._exit(0)
            request = json.loads(message)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            pid = os.fork()
            if pid == 0:
                _run(sock, fds, request, main)
            for f in fds:
                os.close(f)
            children[pid] = request["id"]
            sock.send(json.dumps({"id": request["id"], "pid": pid}).encode())
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            rid = children.pop(pid, None)
            if rid is not None:
                code = os.waitstatus_to_exitcode(status)
                sock.send(json.dumps({"id": rid, "returncode": code}).encode())


def _run(sock: socket.socket, fds: list[int], request: dict, main) -> None:
    """In the fork: become the run's process, run the runner, exit as Python would."""
    status = 1
    try:
        os.setsid()
        sock.close()
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for f in (stdin, *fds):
            os.close(f)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        numpy = sys.modules.get("numpy")
        if numpy is not None:  # a fresh import seeds it from the OS; the fork shares ours
            numpy.random.seed()
        sys.argv = ["-c", *request["argv"]]
        try:
            raise SystemExit(main(request["argv"]))
        except SystemExit as exc:
            status = _exit_status(exc.code)
        except BaseException:  # noqa: B902 - as the interpreter: the traceback, then 1
            sys.excepthook(*sys.exc_info())
        for thread in threading.enumerate():  # the interpreter's shutdown waits for these
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(status)


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1
