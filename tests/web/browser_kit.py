"""A real headless Chromium (Debian's ``chromium`` and ``chromedriver``) driven by Selenium, used from async tests.

Selenium blocks, and the API under test runs on the test's event loop, so every browser call runs in a thread.
``browser_or_skip`` says exactly what is missing where the browser cannot run (no package, no driver).
"""

from __future__ import annotations

import asyncio
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"  # `make test` installs it (npm)
SERIOUS = ("serious", "critical")


def missing() -> str | None:
    """Why no browser can run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    for path, package in ((CHROMIUM, "chromium"), (DRIVER, "chromium-driver")):
        if not shutil.which(path):
            return f"{path} is missing: apt-get install {package} (make .venv/.system-packages does)"
    return None


class Browser:
    def __init__(self, width: int = 1100, height: int = 900, javascript: bool = True) -> None:
        from selenium import webdriver

        options = webdriver.ChromeOptions()
        if not javascript:
            options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
        options.binary_location = CHROMIUM
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--disable-gpu",
            f"--window-size={width},{height}",
            "--lang=en-US",
        ):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=DRIVER))

    async def get(self, url: str) -> None:
        await asyncio.to_thread(self.driver.get, url)

    async def script(self, source: str, *args: Any) -> Any:
        return await asyncio.to_thread(self.driver.execute_script, source, *args)

    async def text(self) -> str:
        return await self.script("return document.body.innerText")

    async def sign_in(self, base: str, token: str, next_path: str) -> None:
        """Fill in the sign-in form and submit it, as a person would."""
        from selenium.webdriver.common.by import By

        await self.get(f"{base}/sign-in?next={next_path}")
        field = await asyncio.to_thread(self.driver.find_element, By.ID, "token")
        await asyncio.to_thread(field.send_keys, token)
        button = await asyncio.to_thread(self.driver.find_element, By.CSS_SELECTOR, "form.sign-in button")
        await asyncio.to_thread(button.click)
        for _ in range(100):
            if await self.script(
                "return document.readyState"
            ) == "complete" and "/sign-in" not in await asyncio.to_thread(lambda: self.driver.current_url):
                return
            await asyncio.sleep(0.05)

    async def url(self) -> str:
        return await asyncio.to_thread(lambda: self.driver.current_url)

    async def arrive(self, pattern: str, timeout_s: float = 120) -> str:
        """Wait until the page's address matches ``pattern`` (a regular expression) and it has loaded; its text."""
        for _ in range(int(timeout_s / 0.1)):
            if re.search(pattern, await self.url()) and await self.script("return document.readyState") == "complete":
                return await self.text()
            await asyncio.sleep(0.1)
        raise AssertionError(f"the browser stayed on {await self.url()}, not {pattern}")

    async def keys(self, *keys: str) -> None:
        """Keys pressed where the focus is, as a person at the keyboard would."""
        from selenium.webdriver.common.action_chains import ActionChains

        await asyncio.to_thread(ActionChains(self.driver).send_keys(*keys).perform)

    async def tab_to(self, selector: str, limit: int = 40) -> None:
        """Press Tab until the element ``selector`` has the focus."""
        from selenium.webdriver.common.keys import Keys

        for _ in range(limit):
            if await self.script("return document.activeElement.matches(arguments[0])", selector):
                return
            await self.keys(Keys.TAB)
        raise AssertionError(f"Tab never reached {selector}")

    async def axe(self) -> list[str]:
        """axe-core's serious and critical findings on the page shown, one line each (rule, what, where)."""
        await self.script(AXE.read_text())
        found = await asyncio.to_thread(
            self.driver.execute_async_script,
            "const done = arguments[arguments.length - 1];"
            "axe.run(document).then(r => done(r.violations), e => done([{id: 'axe failed', impact: 'critical',"
            " help: String(e), nodes: []}]));",
        )
        return [
            f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
            for v in found
            if v["impact"] in SERIOUS
        ]

    async def resize(self, width: int, height: int = 900) -> None:
        await asyncio.to_thread(self.driver.set_window_size, width, height)

    async def screenshot(self, path: str) -> None:
        await asyncio.to_thread(self.driver.save_screenshot, path)

    def close(self) -> None:
        self.driver.quit()


@dataclass
class Site:
    """A running kernelrank the pages are read from, and who has what on it."""

    url: str
    system: object
    tokens: dict[str, str]
    submissions: dict[str, list[int]]
    person_ids: dict[str, int]
