"""A headless Chromium driven over the DevTools protocol on a pipe (no websocket, no Playwright).

``--remote-debugging-pipe`` makes Chromium read NUL-terminated JSON commands on fd 3 and write
replies and events on fd 4. That is enough to open a page, record every network request and
every console message, error and CSP violation, read the DOM after it loaded and take a full
page screenshot: what the report test needs to show that the page contacts nobody and logs no
error. Used by tests only.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-default-apps", "--mute-audio", "--hide-scrollbars")


def chromium() -> str | None:
    """The Chromium executable (Debian's ``chromium``), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageVisit:
    """What opening one page did."""

    url: str
    requests: list[str] = field(default_factory=list)  # every URL the page asked for, itself included
    console_errors: list[str] = field(default_factory=list)  # console errors, exceptions, log errors (CSP included)
    dom: str = ""
    screenshot: bytes = b""

    @property
    def foreign_requests(self) -> list[str]:
        """Requests other than the page itself."""
        return [u for u in self.requests if u != self.url]


class _Pipe:
    def __init__(self, proc: subprocess.Popen[bytes], write_fd: int, read_fd: int) -> None:
        self.proc, self.write_fd, self.read_fd = proc, write_fd, read_fd
        self.buf = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None, timeout: float = 60) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.write_fd, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, timeout: float = 60) -> dict[str, Any]:
        for e in self.events:
            if e.get("method") == method:
                return e
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            self.events.append(m)
            if m.get("method") == method:
                return m

    def drain(self, seconds: float) -> None:
        """Collect events for a moment (late console messages, late requests)."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                self.events.append(self._read(deadline))
            except TimeoutError:
                return

    def _read(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from chromium")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe (exit {self.proc.poll()})")
                self.buf += chunk
        raw, _, self.buf = self.buf.partition(b"\0")
        return json.loads(raw)


def visit(path: Path, *, width: int = 1200, settle: float = 1.0) -> PageVisit:
    """Open ``path`` in headless Chromium and record requests, errors, DOM and a screenshot."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed")
    url = path.resolve().as_uri()
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()

    def wire() -> None:  # in the child: fd 3 = commands in, fd 4 = replies out
        a, b = os.dup(to_child_r), os.dup(from_child_w)
        os.dup2(a, 3)
        os.dup2(b, 4)

    with tempfile.TemporaryDirectory(prefix="ppdp-chromium-") as profile:
        proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                preexec_fn=wire, pass_fds=(3, 4))  # kept after wire() (close_fds runs after it)
        os.close(to_child_r)
        os.close(from_child_w)
        pipe = _Pipe(proc, to_child_w, from_child_r)
        out = PageVisit(url)
        try:
            target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Network", "Runtime", "Log"):
                pipe.send(f"{domain}.enable", session=session)
            pipe.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                      session=session)
            pipe.events.clear()  # only what the report page does counts
            pipe.send("Page.navigate", {"url": url}, session=session)
            pipe.wait_event("Page.loadEventFired")
            pipe.drain(settle)
            out.dom = pipe.send("Runtime.evaluate", {"expression": "document.documentElement.outerHTML", "returnByValue": True},
                                session=session)["result"]["value"]
            shot = pipe.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session)
            out.screenshot = base64.b64decode(shot["data"])
            pipe.drain(0.2)
            for e in pipe.events:
                m, p = e.get("method"), e.get("params", {})
                if m == "Network.requestWillBeSent":
                    out.requests.append(p["request"]["url"])
                elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                    out.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
                elif m == "Runtime.exceptionThrown":
                    out.console_errors.append(str(p.get("exceptionDetails", {}).get("text")))
                elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                    out.console_errors.append(str(p["entry"].get("text")))
            try:
                pipe.send("Browser.close", timeout=10)
            except (RuntimeError, TimeoutError):
                pass
        finally:
            os.close(to_child_w)
            os.close(from_child_r)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return out


def dump_dom(path: Path) -> str:
    """``chromium --headless --dump-dom``: the DOM after load, as the command line prints it."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed")
    with tempfile.TemporaryDirectory(prefix="ppdp-chromium-") as profile:
        done = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", path.resolve().as_uri()],
                              capture_output=True, timeout=120, check=True)
    return done.stdout.decode("utf-8")
