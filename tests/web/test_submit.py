"""Submitting from the browser in a real Chromium against a running kernelrank whose worker judges with the real
harness on CPU: with JavaScript (progress as server-sent events) and without (a page that refreshes itself), by
keyboard alone, a correct and a wrong kernel each time; a forged form from another origin is refused; the same
refusals as every front end."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import re
import threading
from collections.abc import Iterator

import httpx
from browser_kit import Browser, Site
from selenium.webdriver.common.keys import Keys

from adapters.api.web_common import COOKIE

CORRECT = "import torch\n\ndef custom_kernel(data):\n    a, b, out = data\n    return torch.add(a, b, out=out)\n"
WRONG = CORRECT.replace("torch.add", "torch.sub")
RESULT = r"/submissions/\d+$"


async def _by_keyboard(browser: Browser, source: str, mode: str = "test") -> str:
    """Fill in the submit form and send it with the keyboard alone; the submission page's text."""
    await browser.tab_to("#source")
    await browser.keys(source)
    await browser.tab_to("input[name=mode]:checked")  # a group of radio buttons: one Tab stop, arrows choose
    for _ in range(4):
        if await browser.script(f"return document.getElementById('mode-{mode}').checked"):
            break
        await browser.keys(Keys.UP)
    await browser.tab_to("#submit-form button[type=submit]")
    await browser.keys(Keys.ENTER)
    return await browser.arrive(RESULT)


async def test_with_javascript_by_keyboard_a_correct_and_a_wrong_kernel_end_on_their_results(
    live_site: Site, browser: Browser
) -> None:
    await browser.sign_in(live_site.url, live_site.tokens["ada"], "/leaderboards/vectoradd")
    for source, verdict in ((CORRECT, "passed"), (WRONG, "failed")):
        await browser.get(live_site.url + "/submit?leaderboard=vectoradd")
        text = await _by_keyboard(browser, source)
        assert f"On CPU: {verdict}" in text, text
        assert "custom_kernel" in text  # its source: the author's own page
    stored = live_site.system.store.stats().submissions
    assert stored == 2


async def test_with_javascript_the_progress_page_shows_the_runs_progress_as_it_comes(
    slow_site: Site, browser: Browser
) -> None:
    await browser.sign_in(slow_site.url, slow_site.tokens["ada"], "/submit?leaderboard=vectoradd")
    await asyncio.to_thread(browser.driver.find_element("id", "source").send_keys, CORRECT)
    await browser.script("document.querySelector('#submit-form button[type=submit]').click()")
    await browser.arrive(r"/submissions/\d+/live\?")
    seen = set()
    while re.search(r"/live\?", await browser.url()):
        seen.add(await browser.script("const p = document.getElementById('progress'); return p && p.textContent"))
        await asyncio.sleep(0.1)
    assert any(line and "testing" in line for line in seen), seen  # the worker's progress, as the terminal prints it
    assert "On CPU: passed" in await browser.arrive(RESULT)


async def test_without_javascript_the_progress_page_refreshes_until_the_results(
    live_site: Site, browser_without_js: Browser
) -> None:
    browser = browser_without_js
    await browser.sign_in(live_site.url, live_site.tokens["ada"], "/submit?leaderboard=vectoradd")
    for source, verdict in ((WRONG, "failed"), (CORRECT, "passed")):
        await browser.get(live_site.url + "/submit?leaderboard=vectoradd")
        await browser.script("1")  # scripts of the page do not run; WebDriver's own still do
        await asyncio.to_thread(browser.driver.find_element("id", "source").send_keys, source)
        await asyncio.to_thread(browser.driver.find_element("css selector", "#submit-form button").click)
        text = await browser.arrive(RESULT)
        assert f"On CPU: {verdict}" in text, text


async def test_the_progress_page_streams_what_the_terminal_prints(live_site: Site) -> None:
    async with httpx.AsyncClient(base_url=live_site.url, cookies={COOKIE: live_site.tokens["ada"]}) as http:
        sent = await _post(http, {"source": CORRECT, "mode": "test"})
        assert sent.status_code == 303 and re.fullmatch(r"/submissions/\d+/live\?route=.+", sent.headers["location"])
        live = sent.headers["location"]
        events = live.replace("/live?", "/events?")
        async with http.stream("GET", events, timeout=120) as stream:
            body = "".join([chunk async for chunk in stream.aiter_text()])
        assert "event: report" in body and "passed" in body and body.rstrip().endswith("event: end\r\ndata: {}")
        forged = re.sub(r"sig=\w+", "sig=" + "0" * 64, events)
        assert (await http.get(forged)).status_code == 403  # runs someone else names: not followed
    async with httpx.AsyncClient(base_url=live_site.url, cookies={COOKIE: live_site.tokens["bob"]}) as http:
        assert (await http.get(events)).status_code == 403  # another person's cookie: not followed


async def test_the_core_refuses_as_it_does_everywhere_and_the_form_says_why(live_site: Site) -> None:
    async with httpx.AsyncClient(base_url=live_site.url, cookies={COOKIE: live_site.tokens["ada"]}) as http:
        large = await _post(http, {"source": "# x\n" * 4000})
        assert large.status_code == 400 and "the limit is 8 KiB" in large.text and 'role="alert"' in large.text
        wrong_gpu = await _post(http, {"source": CORRECT, "gpu": "H100"})
        assert wrong_gpu.status_code == 400 and "does not offer H100" in wrong_gpu.text
        empty = await _post(http, {"source": "  "})
        assert empty.status_code == 400 and "paste its code" in empty.text
        huge = await _post(http, {"source": "# x\n" * 40_000})  # past the body limit: refused before it is read
        assert huge.status_code == 413 and "kernel files may be at most 8 KiB" in huge.text and "<h1>" in huge.text
    async with httpx.AsyncClient(base_url=live_site.url) as http:
        visitor = await http.post("/submit", data={"leaderboard": "vectoradd", "source": CORRECT})
        assert visitor.status_code == 401
    assert live_site.system.store.stats().submissions == 0


async def test_the_rate_limit_holds_on_the_web_as_everywhere(strict_site: Site) -> None:
    async with httpx.AsyncClient(base_url=strict_site.url, cookies={COOKIE: strict_site.tokens["ada"]}) as http:
        assert (await _post(http, {"source": CORRECT})).status_code == 303
        again = await _post(http, {"source": CORRECT})
    assert again.status_code == 429 and int(again.headers["retry-after"]) > 0
    assert re.search(r'role="alert">You have made 1 submission to CPU in the last minute; try again in', again.text)
    assert strict_site.system.store.stats().submissions == 1


async def _post(http: httpx.AsyncClient, fields: dict[str, str]) -> httpx.Response:
    form = await http.get("/submit?leaderboard=vectoradd")
    csrf = re.search(r'name="csrf" value="(\w+)"', form.text).group(1)
    data = {"csrf": csrf, "leaderboard": "vectoradd", "file_name": "k.py", "gpu": "CPU"} | fields
    return await http.post("/submit", data=data, files={"file": ("", b"")})


@contextlib.contextmanager
def another_site(target: str) -> Iterator[str]:
    """A page on another origin (another port of this host: the same site, so a SameSite cookie still goes along)
    whose form posts a kernel to kernelrank's /submit."""
    forged = (
        f'<!doctype html><html lang="en"><title>free GPUs</title><form method="post" action="{target}/submit" '
        'enctype="multipart/form-data"><input name="leaderboard" value="vectoradd"><input name="csrf" value="guess">'
        f'<textarea name="source">{CORRECT}</textarea><button id="go">go</button></form></html>'
    ).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(forged)

        def log_message(self, *args: object) -> None: ...

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=functools.partial(server.serve_forever, 0.05), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


async def test_a_form_forged_on_another_origin_is_refused(live_site: Site, browser: Browser) -> None:
    await browser.sign_in(live_site.url, live_site.tokens["ada"], "/")
    with another_site(live_site.url) as page:
        await browser.get(page)
        await browser.script("document.getElementById('go').click()")
        text = await browser.arrive(r"/submit$")
    assert "did not come from kernelrank's own submit page" in text
    assert live_site.system.store.stats().submissions == 0
