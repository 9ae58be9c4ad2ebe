"""etu serve: the console in Debian's headless Chromium through textual-serve.

The server is a real `etu serve` process on 127.0.0.1 and a free port; the page starts a
real console process per connection. What the page receives over its websocket is kept
(an init script wraps WebSocket before the page loads) to check the console's text, since
xterm.js draws on a canvas; keys are typed into the page as a user would. The screenshot is
saved as a test artifact (and as screenshots/serve.png for the README when
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
from pathlib import Path

import pytest

from etu_tui.cli.serve import console_command, is_loopback
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


def wait_for_port(port: int, server: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"etu serve exited: {server.stderr.read()}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
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


@pytest.fixture
def server(tmp_path: Path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "etu_tui.cli", "serve", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_port(port, process)
        yield port
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and the consoles it started
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_console_in_the_browser(server: int) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    with chromium() as driver:
        driver.execute_cdp_cmd(
            "Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_WEBSOCKET}
        )
        driver.get(f"http://127.0.0.1:{server}/")
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
        ActionChains(driver).send_keys("n").perform()
        time.sleep(2.0)
        shot = save_artifact(driver, "serve.png")
        if os.environ.get("ETU_UPDATE_SCREENSHOTS"):  # the README's picture, on request only
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
    from etu_tui.cli import serve

    parser = __import__("argparse").ArgumentParser()
    serve.configure(parser)
    assert parser.parse_args([]).host == "127.0.0.1"
