"""A real headless Chromium for report tests (system package ``chromium``, driven by Playwright).

Never downloads a browser (no ``playwright install``): the executable comes from
``MSPROBE_CHROMIUM`` or the usual system paths; tests skip only when none is there.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


def chromium_path() -> str | None:
    """The Chromium executable to use, or ``None``."""
    env = os.environ.get("MSPROBE_CHROMIUM")
    if env and Path(env).is_file():
        return env
    for name in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "chromium", "chromium-browser",
                 "google-chrome", "google-chrome-stable"):
        found = shutil.which(name) if not name.startswith("/") else (name if Path(name).is_file() else None)
        if found:
            return found
    return None


@dataclass
class LoadedPage:
    """An opened report page and everything it said or asked for while loading."""

    page: Any
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Console errors/warnings, uncaught exceptions and any request that is not the file itself."""
        out = [f"console.{t}: {m}" for t, m in self.console if t in ("error", "warning", "assert")]
        out += [f"pageerror: {e}" for e in self.errors]
        out += [f"request: {u}" for u in self.requests if not (u.startswith("file://") or u.startswith("data:"))]
        return out


class Browser:
    """One Chromium for a test module; :meth:`open` loads a report and waits until it is drawn."""

    def __init__(self, executable: str) -> None:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)

    @contextmanager
    def open(self, path: Path, width: int = 1400, height: int = 1000, timeout_ms: int = 600_000) -> Iterator[LoadedPage]:
        page = self.browser.new_page(viewport={"width": width, "height": height})
        page.set_default_timeout(timeout_ms)  # every wait is for an event; the bound only stops a hung page
        loaded = LoadedPage(page)
        page.on("console", lambda m: loaded.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: loaded.errors.append(str(e)))
        page.on("request", lambda r: loaded.requests.append(r.url))
        try:
            page.goto(Path(path).resolve().as_uri())
            # a selector wait needs no eval (the report's CSP forbids it)
            page.wait_for_selector('body[data-ready="1"], #fatal:not([hidden])', timeout=timeout_ms)
            yield loaded
        finally:
            page.close()

    def close(self) -> None:
        self.browser.close()
        self._pw.stop()


def start_browser() -> Browser:
    """A started browser, or ``pytest.skip`` when Playwright or Chromium is missing."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    exe = chromium_path()
    if exe is None:
        pytest.skip("no Chromium found (apt-get install -y chromium, or set MSPROBE_CHROMIUM)")
    return Browser(exe)


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page screenshot under ``test-artifacts/``."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    return path
