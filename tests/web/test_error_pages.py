"""Web error pages and the person page on a phone, in a real headless Chromium: an unknown path, a method a page
does not take and a refused page answer in the site's layout, while the API's routes keep answering JSON; the person
page's tables and chart fit a 390-pixel screen. Screenshots of both at 390 and 1280 px go to
``$KERNELRANK_SCREENSHOTS`` when it names a folder (``docs/screenshots`` for the docs), else to a scratch folder."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from browser_kit import Browser, Site

from adapters.api.app import create_app
from core.contracts.config import Settings

WIDTHS = {"1280": (1280, 900), "390": (390, 844)}
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
# Each table cell's right edge past the screen's, anything scrolled sideways, and the chart's smallest label (px).
FIT = """const width = document.documentElement.clientWidth;
return {
  cut: [...document.querySelectorAll('main td, main tbody th')].filter(c => c.offsetParent !== null
         && c.getBoundingClientRect().right > width + 0.5).map(c => c.innerText.slice(0, 20)),
  sideways: [document.documentElement, ...document.querySelectorAll('main *')].filter(e =>
         e.scrollWidth > e.clientWidth + 1 && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)
         || e === document.documentElement && e.scrollWidth > width).map(e => e.tagName + '.' + e.className),
  label: Math.min(...[...document.querySelectorAll('svg.chart text')].map(t => t.getBoundingClientRect().height)),
}"""


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("KERNELRANK_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def test_unknown_web_paths_answer_a_page_in_the_sites_layout(site: Site, browser: Browser, shots: Path) -> None:
    for path in ("/nope", "/favicon.ico", "/people/abc", "/leaderboards/vectoradd/CPU/more"):
        await browser.get(site.url + path)
        text = await browser.text()
        assert "Page not found" in text and f"There is no page at {path}" in text, path
        assert await browser.script("return document.querySelector('header a').textContent") == "kernelrank"
        assert await browser.script("return document.querySelector('a[href=\"/\"]') !== null")
    for name, size in WIDTHS.items():
        await browser.resize(*size)
        await browser.get(site.url + "/nope")
        await browser.screenshot(str(shots / f"web-404-{name}.png"))
    await browser.get(site.url + "/leaderboards/vectoradd/H100")  # the core's refusal, as a page too
    assert "vectoradd does not offer H100" in await browser.text()


async def test_errors_answer_html_to_a_browser_and_json_to_programs(site: Site) -> None:
    page = {"Accept": BROWSER_ACCEPT}
    async with httpx.AsyncClient(base_url=site.url) as http:
        missing = await http.get("/nope", headers=page)
        assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
        assert "<h1>Page not found</h1>" in missing.text
        wrong = await http.put("/", headers=page)
        assert wrong.status_code == 405 and set(wrong.headers["allow"].split(", ")) == {"GET", "HEAD"}
        assert "<h1>Not allowed</h1>" in wrong.text and "takes GET, not PUT" in wrong.text
        # A program (curl sends */*), any API route even from a browser, and popcorn-cli's routes: JSON.
        for path, headers in (("/nope", {}), ("/v1/nope", page), ("/v1/people/abc/x", page), ("/gpus", {})):
            answer = await http.get(path, headers=headers)
            assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found", path
        assert (await http.get("/gpus/vectoradd")).json() == ["CPU"]
        assert (await http.get("/leaderboards", headers={"Accept": "*/*"})).json()[0]["name"] == "vectoradd"
        assert (await http.get("/user/submissions")).json()["detail"].startswith("Name the leaderboard")


async def test_an_unforeseen_failure_is_a_page_for_a_browser_and_json_for_the_api(tmp_path: Path) -> None:
    class Broken:
        async def request(self, command, timeout_s=5.0):
            raise RuntimeError("secret internal detail")

    transport = httpx.ASGITransport(app=create_app(Broken(), Settings(home=tmp_path)), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as http:
        page = await http.get("/", headers={"Accept": BROWSER_ACCEPT})
        api = await http.get("/v1/stats", headers={"Accept": BROWSER_ACCEPT})
    assert page.status_code == 500 and "<h1>Something went wrong</h1>" in page.text and "secret" not in page.text
    assert api.status_code == 500 and api.json()["error"]["code"] == "internal" and "secret" not in api.text


async def test_the_person_page_fits_a_phone(site: Site, browser: Browser, shots: Path) -> None:
    path = f"/people/{site.person_ids['ada']}"
    for name, size in WIDTHS.items():
        await browser.resize(*size)
        await browser.get(site.url + path)
        fit = await browser.script(FIT)
        assert fit["cut"] == [] and fit["sideways"] == [], (name, fit)
        assert fit["label"] >= 11, f"the chart's labels are {fit['label']:.1f} px tall at {name} px"
        await browser.screenshot(str(shots / f"web-person-{name}.png"))
    cells = await browser.script("return [...document.querySelectorAll('tbody td')].map(c => c.innerText)")
    assert any(cell.startswith("#") for cell in cells)  # reflowed, every value still there
