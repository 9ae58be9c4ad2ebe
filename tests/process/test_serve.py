"""etu serve: the console in Debian's headless Chromium through textual-serve.

The server is a real `etu serve` process on 127.0.0.1 and a free port; the page starts a
real console process per connection. What the page receives over its websocket is kept
(an init script wraps WebSocket before the page loads) to check the console's text, since
xterm.js draws on a canvas; keys are typed into the page as a user would. The screenshot is
saved as a test artifact (and as screenshots/serve.png for docs/console.md when
ETU_UPDATE_SCREENSHOTS is set: a test run never changes tracked files).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from etu.tui.cli.serve import browse_url, console_command, is_loopback
from tests.browser import ARTIFACTS, chromium, console_errors, save_artifact

ROOT = Path(__file__).resolve().parent.parent.parent
RECORD_WEBSOCKET = """
(() => {
  window.__etuText = "";
  const Native = window.WebSocket;
  const decoder = new TextDecoder();
  function Recorded(...args) {
    const ws = new Native(...args);
    ws.addEventListener("message", (event) => {
      const data = event.data;
      if (typeof data === "string") window.__etuText += data;
      else if (data instanceof ArrayBuffer) window.__etuText += decoder.decode(data);
      else if (data && data.text) data.text().then((t) => { window.__etuText += t; });
    });
    return ws;
  }
  Recorded.prototype = Native.prototype;
  Object.assign(Recorded, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  window.WebSocket = Recorded;
})();
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(
    port: int, server: subprocess.Popen, timeout: float = 30, address: str = "127.0.0.1"
) -> None:
    deadline = time.monotonic() + timeout
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    target = "::1" if address == "::" else "127.0.0.1" if address == "0.0.0.0" else address
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"etu serve exited with {server.returncode}")
        with socket.socket(family) as probe:
            if probe.connect_ex((target, port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on {port}")


def wait_for_text(driver, wanted: str, since: int = 0, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = driver.execute_script("return window.__etuText || ''")[since:]
        if wanted in text:
            return text
        time.sleep(0.3)
    raise AssertionError(f"{wanted!r} never reached the page; it got {len(text)} chars")


TOKEN = "etu-test-token-" + "x" * 20


@contextmanager
def serving(tmp_path: Path, *args: str, host: str = "127.0.0.1", token: str | None = TOKEN):
    """A real `etu serve` on a free port: (port, process); its stderr goes to a file."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ETU_SERVE_TOKEN", None)
    if token is not None:
        env["ETU_SERVE_TOKEN"] = token
    log = (tmp_path / f"serve-{port}.err").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "etu.tui.cli", "serve", "--port", str(port), "--host", host,
         *args],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=log, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_port(port, process, address=host)
        yield port, process
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and the consoles it started
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


@pytest.fixture
def server(tmp_path: Path):
    with serving(tmp_path) as (port, _process):
        yield port


def consoles_started(server: subprocess.Popen) -> list:
    """Console processes the server has started (each connection that got in starts one)."""
    import psutil

    return [
        child for child in psutil.Process(server.pid).children(recursive=True)
        if "etu.tui.cli" in " ".join(child.cmdline()) and child.pid != server.pid
    ]  # fmt: skip


def open_socket(url: str, origin: str | None, token: str | None, cookie_port: int) -> str:
    """'open' once the console's first bytes arrive, or 'refused STATUS'."""
    import asyncio

    import aiohttp

    async def attempt() -> str:
        headers = {"Origin": origin} if origin else {}
        cookies = {f"etu_serve_token_{cookie_port}": token} if token else {}
        async with aiohttp.ClientSession(cookies=cookies) as session:
            try:
                async with session.ws_connect(url, headers=headers) as socket_:
                    message = await asyncio.wait_for(socket_.receive(), 30)
                    return "open" if message.type == aiohttp.WSMsgType.BINARY else str(message)
            except aiohttp.WSServerHandshakeError as error:
                return f"refused {error.status}"

    return asyncio.run(attempt())


def test_console_in_the_browser(server: int) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    with chromium() as driver:
        driver.execute_cdp_cmd(
            "Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_WEBSOCKET}
        )
        driver.get(f"http://127.0.0.1:{server}/?token={TOKEN}")
        text = wait_for_text(driver, "demo_cnn.pte")  # the console opened the demo program
        assert "EthosUBackend" in text or "NPU" in text
        time.sleep(1.0)
        terminal = driver.find_element(By.CSS_SELECTOR, ".xterm")
        terminal.click()
        mark = len(driver.execute_script("return window.__etuText"))
        ActionChains(driver).send_keys("n").perform()  # the NPU tab
        wait_for_text(driver, "Vela", since=mark)
        mark = len(driver.execute_script("return window.__etuText"))
        ActionChains(driver).send_keys("m").perform()  # the Memory tab
        wait_for_text(driver, "arm_executor_runner", since=mark)
        mark = len(driver.execute_script("return window.__etuText"))
        ActionChains(driver).send_keys("n").perform()
        wait_for_text(driver, "Vela", since=mark)  # the NPU tab drawn again: the picture
        shot = save_artifact(driver, "serve.png")
        if os.environ.get("ETU_UPDATE_SCREENSHOTS"):  # docs/console.md's picture, on request only
            shutil.copyfile(shot, ROOT / "screenshots" / "serve.png")
        assert shot.stat().st_size > 10_000
        errors = [e for e in console_errors(driver) if "favicon" not in e]
        assert errors == []
    assert ARTIFACTS.is_dir()


def test_command_is_quoted_and_loopback_is_the_default(tmp_path: Path) -> None:
    odd = tmp_path / "a b;touch x"
    odd.mkdir()
    command = console_command(odd)
    assert command.endswith(f"'{odd}'")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")
    assert browse_url("0.0.0.0", 8000) == "http://127.0.0.1:8000"
    assert browse_url("::", 8000) == "http://[::1]:8000"
    assert browse_url("192.168.1.2", 8000) == "http://192.168.1.2:8000"
    assert browse_url("0.0.0.0", 8000, "https://lab.example/etu/") == "https://lab.example/etu"
    from etu.tui.cli import serve

    parser = __import__("argparse").ArgumentParser()
    serve.configure(parser)
    assert parser.parse_args([]).host == "127.0.0.1"


# ------------------------------------------------------------------ the doors (issue 20.1)


def test_the_socket_needs_the_token_and_the_served_origin(tmp_path: Path) -> None:
    with serving(tmp_path) as (port, process):
        url, served = f"ws://127.0.0.1:{port}/ws", f"http://127.0.0.1:{port}"
        assert open_socket(url, "http://evil.example", TOKEN, port) == "refused 403"
        assert open_socket(url, None, TOKEN, port) == "refused 403"
        assert open_socket(url, served, None, port) == "refused 403"
        assert open_socket(url, served, TOKEN[:-1] + "y", port) == "refused 403"
        assert consoles_started(process) == []  # no refusal started a console
        assert open_socket(url, served, TOKEN, port) == "open"
        log = (tmp_path / f"serve-{port}.err").read_text()
    refusals = [line for line in log.splitlines() if line.startswith("etu serve: refused")]
    assert len(refusals) == 4
    assert "Origin 'http://evil.example'" in refusals[0] and "token" in refusals[2]


def test_the_page_needs_the_token_and_a_rebinding_host_is_refused(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    def status(path: str, host: str | None = None) -> int:
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
        if host:
            request.add_header("Host", host)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    with serving(tmp_path) as (port, process):
        assert status("/") == 403 and status("/?token=wrong-wrong-wrong-wrong") == 403
        assert status(f"/?token={TOKEN}", host=f"rebind.example:{port}") == 403
        assert status(f"/?token={TOKEN}") == 200
        assert status(f"/?token={TOKEN}", host=f"localhost:{port}") == 200
        assert consoles_started(process) == []
        out = process.stdout.readline()
    assert f"http://127.0.0.1:{port}/?token={TOKEN}" in out


def test_a_client_of_another_uid_without_the_token_is_refused(tmp_path: Path) -> None:
    """Another local user (uid 65534) opens the socket with the right origin: refused."""
    curl = shutil.which("curl")
    if os.geteuid() != 0 or curl is None:
        pytest.skip("needs root (to run a client as another uid) and curl")
    with serving(tmp_path) as (port, process):
        handshake = [
            curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
            "-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
            "-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "-H", f"Origin: http://127.0.0.1:{port}", f"http://127.0.0.1:{port}/ws",
        ]  # fmt: skip
        other = subprocess.run(handshake, user=65534, group=65534, capture_output=True,
                               text=True, cwd="/", timeout=30, check=False)  # fmt: skip
        assert other.stdout == "403"
        assert consoles_started(process) == []
        with_token = subprocess.run(
            [*handshake[:-1], "-b", f"etu_serve_token_{port}={TOKEN}", handshake[-1]],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert with_token.stdout == "101"  # the same request with the token gets in


CROSS_ORIGIN_PAGE = """<!doctype html><title>probe</title><script>
window.__result = "pending";
const socket = new WebSocket("ws://127.0.0.1:PORT/ws");
socket.onopen = () => { window.__result = "open"; };
socket.onerror = () => { window.__result = "error"; };
socket.onclose = (event) => { if (window.__result === "pending") window.__result = "closed"; };
</script>"""


def test_a_page_from_another_origin_cannot_open_the_socket(tmp_path: Path) -> None:
    """Headless Chromium holds the token cookie (the user opened the console), then a page
    served from another origin opens the console's socket: refused, nothing started."""
    with serving(tmp_path) as (port, _server):
        site = tmp_path / "site"
        site.mkdir()
        (site / "index.html").write_text(CROSS_ORIGIN_PAGE.replace("PORT", str(port)))
        other_port = free_port()
        page_server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(other_port), "--bind", "127.0.0.2"],
            cwd=site, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_for_port(other_port, page_server, address="127.0.0.2")
            with chromium() as driver:
                driver.get(f"http://127.0.0.1:{port}/?token={TOKEN}")  # the user's own tab
                time.sleep(1.0)
                driver.get(f"http://127.0.0.2:{other_port}/")
                deadline = time.monotonic() + 20
                result = "pending"
                while result == "pending" and time.monotonic() < deadline:
                    result = driver.execute_script("return window.__result")
                    time.sleep(0.2)
        finally:
            page_server.terminate()
            page_server.wait(timeout=10)
        assert result in ("error", "closed")
        log = (tmp_path / f"serve-{port}.err").read_text()
        assert f"Origin 'http://127.0.0.2:{other_port}' is not the served origin" in log


def test_token_rules_and_ipv6_urls(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ETU_SERVE_TOKEN": "short"}
    serve = [sys.executable, "-m", "etu.tui.cli", "serve"]
    weak = subprocess.run([*serve, "--port", "1"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert weak.returncode == 2 and "ETU_SERVE_TOKEN" in weak.stderr
    assert len(weak.stderr.strip().splitlines()) == 1
    empty = subprocess.run([*serve, "--token", ""], env=env, capture_output=True, text=True,
                           timeout=60, check=False)  # fmt: skip
    assert empty.returncode == 2 and "--token" in empty.stderr

    with serving(tmp_path, host="::", token=None) as (port, process):
        line = process.stdout.readline()
        # the address to open, never the listen-everywhere one (issue 24 §10)
        assert line.startswith(f"etu: the console is at http://[::1]:{port}/?token=")
        token = line.split("?token=", 1)[1].split()[0]
        assert len(token) >= 32  # a fresh random token per start
        served = f"http://[::1]:{port}"
        assert open_socket(f"ws://[::1]:{port}/ws", served, token, port) == "open"
        assert open_socket(f"ws://[::1]:{port}/ws", "http://evil.example", token, port) == (
            "refused 403"
        )
    banner = line + process.stdout.read()
    assert "from another machine" in banner
    assert "Serving" not in banner and "'\"" not in banner  # textual-serve's quoted command


def test_guard_rules() -> None:
    from etu.tui.serve_guard import Guard, url_host

    guard = Guard(token=TOKEN, host="127.0.0.1", port=8000)
    assert guard.host_allowed("127.0.0.1:8000") and guard.host_allowed("localhost:8000")
    assert not guard.host_allowed("127.0.0.1:9000") and not guard.host_allowed("evil:8000")
    assert not guard.host_allowed(None) and not guard.host_allowed("[::1")
    assert guard.origin_allowed("http://127.0.0.1:8000", "127.0.0.1:8000")
    assert not guard.origin_allowed("http://localhost:8000", "127.0.0.1:8000")
    assert not guard.origin_allowed("null", "127.0.0.1:8000")
    everywhere = Guard(token=TOKEN, host="0.0.0.0", port=8000)
    assert everywhere.host_allowed("192.168.1.7:8000")
    assert not everywhere.host_allowed("attacker.example:8000")  # DNS rebinding
    allowed = Guard(token=TOKEN, host="127.0.0.1", port=8000,
                    allowed_origins=frozenset({"https://lab.example"}))  # fmt: skip
    assert allowed.origin_allowed("https://lab.example", "127.0.0.1:8000")
    assert url_host("::") == "[::]" and url_host("127.0.0.1") == "127.0.0.1"
