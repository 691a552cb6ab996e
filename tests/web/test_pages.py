"""The web leaderboard in a real headless Chromium against a running kernelrank: public pages without a token, a
submission's page for its author alone (signed in through the form), and an accessibility smoke check."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta

from browser_kit import Browser, Site

# WCAG 2 contrast ratio of each element's text against the first opaque background behind it.
CONTRAST = """
function lum(c) {
  const [r, g, b] = c.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => {
    v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function behind(el) {
  for (; el; el = el.parentElement) {
    const c = getComputedStyle(el).backgroundColor;
    if (c !== 'transparent' && !/rgba\\(.*, 0\\)$/.test(c)) return c;
  }
  return 'rgb(255, 255, 255)';
}
const low = [];
for (const el of document.querySelectorAll('main p, main td, main th, main h1, main h2, main a, main label')) {
  if (!el.innerText.trim()) continue;
  const [a, b] = [lum(getComputedStyle(el).color), lum(behind(el))];
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  if (ratio < 4.5) low.push(`${el.tagName} "${el.innerText.slice(0, 30)}" ${ratio.toFixed(2)}`);
}
return low;
"""
OUTLINE = "return [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')].map(h => Number(h.tagName[1]))"
UNLABELLED = """return [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
  .filter(i => !i.getAttribute('aria-label') && !(i.id && document.querySelector(`label[for="${i.id}"]`)))
  .map(i => i.name)"""


async def test_home_lists_the_leaderboards_with_their_gpus_and_time_left(site: Site, browser: Browser) -> None:
    store = site.system.store
    store.upsert_leaderboard(
        dataclasses.replace(store.get_leaderboard("vectoradd"), deadline=datetime.now(UTC) + timedelta(days=2, hours=5))
    )
    await browser.get(site.url + "/")
    text = await browser.text()
    assert "Leaderboards" in text and "vectoradd" in text and "closes in 2 days" in text
    links = await browser.script("return [...document.querySelectorAll('main a')].map(a => a.pathname)")
    assert "/leaderboards/vectoradd/CPU" in links


async def test_a_ranking_page_shows_the_entries_with_medals(site: Site, browser: Browser) -> None:
    await browser.get(site.url + "/leaderboards/vectoradd/CPU")
    rows = await browser.script("return [...document.querySelectorAll('tbody tr')].map(r => r.innerText)")
    assert len(rows) == 2 and {"Ada", "Bob"} == {name for row in rows for name in ("Ada", "Bob") if name in row}
    assert re.search(r"\d µs", rows[0])
    medals = await browser.script("return [...document.querySelectorAll('tbody .medal')].map(m => m.ariaLabel)")
    assert medals == ["gold medal", "silver medal"]


async def test_a_person_page_shows_bests_a_progress_chart_and_submissions(site: Site, browser: Browser) -> None:
    await browser.get(f"{site.url}/people/{site.person_ids['ada']}")
    text = await browser.text()
    assert "Ada" in text and "Best entries" in text and f"#{site.submissions['ada'][-1]}" in text
    chart = await browser.script("""const svg = document.querySelector('svg.chart');
        return svg && [svg.querySelector('title').textContent, svg.querySelectorAll('circle').length,
                       svg.getBoundingClientRect().width]""")
    assert chart is not None, "no chart on the person page"
    title, points, width = chart
    assert "vectoradd / CPU" in title and points >= 1 and width > 100


async def test_a_submission_page_refuses_a_visitor_and_others_and_shows_its_author_everything(
    site: Site, browser: Browser
) -> None:
    first, latest = site.submissions["ada"]
    page = f"/submissions/{latest}"
    await browser.get(site.url + page)
    refused = await browser.text()
    assert "sign in" in refused.lower() and "custom_kernel" not in refused

    await browser.sign_in(site.url, site.tokens["bob"], page)
    others = await browser.text()
    assert "someone else's" in others and "custom_kernel" not in others and "Ran on" not in others
    await browser.script("document.querySelector('header form button').click()")  # sign out

    await browser.sign_in(site.url, site.tokens["ada"], page)
    mine = await browser.text()
    assert f"Submission #{latest}" in mine and "passed" in mine and "Source" in mine
    assert "return a.add(b)" in mine  # highlighted source
    diff = await browser.script(
        "return [...document.querySelectorAll('.diff .add, .diff .del')].map(s => s.className + ' ' + s.textContent)"
    )
    assert f"del --- #{first} k.py" in diff and "add +    return a.add(b)  # faster" in diff
    cookie = await browser.script("return document.cookie")
    assert site.tokens["ada"] not in cookie  # HttpOnly: no script reads it


async def test_pages_pass_an_accessibility_smoke_check(site: Site, browser: Browser) -> None:
    await browser.sign_in(site.url, site.tokens["ada"], "/")
    for path in (
        "/",
        "/leaderboards/vectoradd/CPU",
        f"/people/{site.person_ids['ada']}",
        f"/submissions/{site.submissions['ada'][-1]}",
        "/sign-in",
    ):
        await browser.get(site.url + path)
        outline = await browser.script(OUTLINE)
        assert outline[:1] == [1] and outline.count(1) == 1, (path, outline)  # one h1, first
        assert all(b - a <= 1 for a, b in zip(outline, outline[1:], strict=False)), (path, outline)
        assert await browser.script(UNLABELLED) == [], path
        assert await browser.script(CONTRAST) == [], path
        assert await browser.script("return document.documentElement.lang") == "en"
        assert await browser.script("return document.querySelector('meta[name=viewport]') !== null")
