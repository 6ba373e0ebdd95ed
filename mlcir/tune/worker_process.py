"""One worker process of the tuner, asked one request at a time, replaced when it fails.

``WorkerProcess("build")`` runs ``python -m mlcir.tune.worker build`` (:mod:`.worker`): one JSON
request per line on its stdin, one JSON answer per line on its stdout. A worker that crashes
(LLVM is an assertions build) or does not answer within the time-out is killed; the call then
answers ``{"ok": false, "error": "builder crashed (signal 6, SIGABRT)"}`` or ``"… timed out after
20 s"``, and the next call starts a fresh process. So a candidate costs at most one process,
never the search.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from typing import Any


class WorkerProcess:
    """One ``python -m mlcir.tune.worker <role>`` process, started on the first call."""

    NOUNS = {"build": "builder", "run": "runner"}

    def __init__(self, role: str, env: dict[str, str] | None = None):
        self.role = role
        self.noun = self.NOUNS[role]
        self.env = env
        self.proc: subprocess.Popen | None = None

    def _start(self) -> None:
        env = dict(os.environ)
        env.update(self.env or {})
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen([sys.executable, "-m", "mlcir.tune.worker", self.role],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1, env=env)

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``request`` and wait for the answer: the worker's, or ``{"ok": False, "error":
        …}`` when it crashed or did not answer within ``timeout`` seconds (it is killed)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        started = time.monotonic()
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if ready:
            return self._read()
        seconds = time.monotonic() - started
        self.kill()
        return {"ok": False, "error": f"{self.noun} timed out after {seconds:.0f} s"}

    def _read(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line:
            return json.loads(line)
        code = self.proc.wait()
        self._release()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return {"ok": False, "error": f"{self.noun} crashed (signal {-code}, {name})"}
        return {"ok": False, "error": f"{self.noun} exited with status {code}"}

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self._release()

    def close(self) -> None:
        """Ask the worker to stop (end of its input), kill it if it does not within 5 s."""
        if self.proc is not None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
            self._release()

    def _release(self) -> None:
        """Close both pipes of a finished worker (else each leaks a ResourceWarning)."""
        assert self.proc is not None
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass
        self.proc = None
