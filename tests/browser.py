"""Debian's headless Chromium driven through selenium, for the report and `etu serve` tests.

`make system-deps` installs the Debian packages (chromium, chromium-driver); when they or
selenium are missing, the tests that need a browser skip and say which one is missing.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1400,900",
)  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parent / ".browser-artifacts"


def missing_browser() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    for name, package in (("chromium", "chromium"), ("chromedriver", "chromium-driver")):
        if shutil.which(name) is None:
            return f"{name} not found: install Debian's {package} (make system-deps)"
    return None


@contextmanager
def chromium() -> Iterator:
    """A fresh headless Chromium (own profile folder) with its console log kept."""
    reason = missing_browser()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="etu-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium")
        for flag in CHROMIUM_FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={profile}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(executable_path=shutil.which("chromedriver"))
        driver = webdriver.Chrome(options=options, service=service)
        try:
            yield driver
        finally:
            driver.quit()


def console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def save_artifact(driver, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    driver.save_screenshot(str(path))
    return path
