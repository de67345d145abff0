"""A headless Chromium driven over the Chrome DevTools protocol, for tests of web pages.

The distribution's Chromium (`apt-get install chromium`, /usr/bin/chromium) runs with
`--remote-debugging-pipe`: DevTools messages, JSON each ended by a NUL byte, go in on its file
descriptor 3 and come out on 4. Written here (about 100 lines) rather than taken from playwright
or a websocket client: no browser download, no extra dependency, no port to find.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
]


class DevToolsError(Exception):
    """Chromium answered a command with an error, or not at all."""


class Chromium:
    """One headless browser with one page. Use as a context manager."""

    def __init__(self, profile: Path) -> None:
        if CHROMIUM is None:
            raise RuntimeError("no chromium on PATH")
        to_browser, self._send_fd = os.pipe()
        self._recv_fd, from_browser = os.pipe()

        def at_3_and_4() -> None:  # in the child, before exec: its ends of the pipes become 3 and 4
            ends = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser, from_browser)]
            os.dup2(ends[0], 3)
            os.dup2(ends[1], 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=at_3_and_4,
            pass_fds=(3, 4),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self.session: str | None = None

    def command(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        """Send one DevTools command (to the page once `open` attached it) and return its result."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self.session is not None and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._send_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next_id:
                    if "error" in reply:
                        raise DevToolsError(f"{method}: {reply['error']}")
                    result: dict[str, Any] = reply["result"]
                    return result
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._recv_fd], [], [], left)[0]:
                raise DevToolsError(f"{method}: no answer within {timeout:g}s")
            piece = os.read(self._recv_fd, 1 << 20)
            if not piece:
                raise DevToolsError(f"{method}: chromium exited")
            self._buffer += piece

    def open(self, url: str) -> None:
        """Open `url` in a new page and direct the following commands to it."""
        target = self.command("Target.createTarget", url=url)["targetId"]
        self.session = self.command("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable values only)."""
        reply = self.command("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in reply:
            raise DevToolsError(f"{expression!r} raised: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def screenshot(self, path: Path) -> None:
        data = self.command("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        for fd in (self._send_fd, self._recv_fd):
            os.close(fd)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
