"""The web leaderboard in a real headless Chromium against a running kernelrank: public pages without a token
(rankings, people, challenges), a submission's page for its author alone (signed in through the form), and an
accessibility smoke check."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from datetime import UTC, datetime, timedelta

import pytest
from browser_kit import Browser, Site

from adapters.api import web
from storage.records import Challenge

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


def schedule_challenges(site: Site) -> None:
    """Week 48 open, Week 49 upcoming and Week 47 closed, verified (Ada gold, tied with Bob, held), with teams."""
    challenges, now = site.system.store.challenges, datetime.now(UTC)
    ada, bob = site.person_ids["ada"], site.person_ids["bob"]
    for title, opens, closes in (
        ("Week 48", now - timedelta(hours=1), now + timedelta(days=2, hours=5)),
        ("Week 49", now + timedelta(days=3, hours=2), now + timedelta(days=5)),
    ):
        challenges.add(Challenge(title, ["vectoradd"], opens, closes), now)
    closed = challenges.add(Challenge("Week 47", ["vectoradd"], now - timedelta(days=8), now - timedelta(days=1)), now)
    entry = {"score_us": 10.0, "rerun_us": 10.1, "interval": [9.9, 10.3], "reason": "", "run_id": "r"}
    podium = [
        entry
        | {"rank": 1, "person_id": ada, "name": "Ada", "submission_id": 3, "verdict": "verified", "tie_with": [2]},
        entry
        | {
            "rank": 2,
            "person_id": bob,
            "name": "Bob",
            "submission_id": 2,
            "verdict": "held",
            "reason": "its re-run did not pass: wrong output",
            "tie_with": [1],
        },
    ]
    results = {
        "boards": [{"leaderboard": "vectoradd", "gpu": "CPU", "podium": podium, "frozen": []}],
        "teams": [["red", 10]],
    }
    challenges.update(dataclasses.replace(closed, results=results))
    challenges.started(closed.id, "close", now)
    challenges.done(closed.id, "close", now)


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


async def test_home_lists_open_and_upcoming_challenges_with_their_times(site: Site, browser: Browser) -> None:
    schedule_challenges(site)
    await browser.get(site.url + "/")
    text = await browser.text()
    assert re.search(r"Week 48: vectoradd\. Open until .* UTC: closes in 2 days", text), text
    assert re.search(r"Week 49: vectoradd\. Opens .* UTC: opens in 3 days", text), text
    links = await browser.script("return [...document.querySelectorAll('main a')].map(a => a.pathname)")
    assert "/challenges/Week%2048" in links and "/challenges/Week%2049" in links
    assert "/challenges/Week%2047" not in links  # closed: no longer news on the home page


async def test_a_challenge_page_shows_its_leaderboards_and_live_standings(site: Site, browser: Browser) -> None:
    schedule_challenges(site)
    await browser.get(site.url + "/challenges/Week%2048")
    text = await browser.text()
    assert "Week 48" in text and "closes in 2 days" in text and "Standings" in text
    links = await browser.script("return [...document.querySelectorAll('main li a')].map(a => a.pathname)")
    assert links == ["/leaderboards/vectoradd/CPU"]
    rows = await browser.script("return [...document.querySelectorAll('tbody tr')].map(r => r.innerText)")
    assert len(rows) == 2 and {"Ada", "Bob"} == {name for row in rows for name in ("Ada", "Bob") if name in row}
    assert re.search(r"\d µs", rows[0])


async def test_a_closed_challenge_page_shows_verified_winners_held_entries_and_teams(
    site: Site, browser: Browser
) -> None:
    schedule_challenges(site)
    await browser.get(site.url + "/challenges/Week%2047")
    text = await browser.text()
    assert "Winners" in text and "vectoradd on CPU" in text and "Teams" in text
    rows = await browser.script("return [...document.querySelectorAll('tbody tr')].map(r => r.innerText)")
    assert "Ada" in rows[0] and "verified (re-run 10.1 µs); a tie with #2" in rows[0], rows
    assert rows[1].startswith("held") and "held for review: its re-run did not pass: wrong output" in rows[1], rows
    assert rows[2].split() == ["red", "10"]
    medals = await browser.script("return [...document.querySelectorAll('tbody .medal')].map(m => m.ariaLabel)")
    assert medals == ["gold medal"]


async def test_a_ranking_page_shows_the_entries_with_medals(site: Site, browser: Browser) -> None:
    await browser.get(site.url + "/leaderboards/vectoradd/CPU")
    rows = await browser.script("return [...document.querySelectorAll('tbody tr')].map(r => r.innerText)")
    assert len(rows) == 2 and {"Ada", "Bob"} == {name for row in rows for name in ("Ada", "Bob") if name in row}
    assert re.search(r"\d µs", rows[0])
    medals = await browser.script("return [...document.querySelectorAll('tbody .medal')].map(m => m.ariaLabel)")
    assert medals == ["gold medal", "silver medal"]


async def test_a_ranking_page_is_a_page_of_rows_with_links_to_the_others_without_javascript(
    site: Site, browser_without_js: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web, "RANKING_PAGE", 1)  # two people rank: two pages of one row
    browser, rows = browser_without_js, "return [...document.querySelectorAll('tbody tr')].map(r => r.innerText)"
    await browser.get(site.url + "/leaderboards/vectoradd/CPU")
    (first,) = await browser.script(rows)
    leader, second = ("Ada", "Bob") if "Ada" in first else ("Bob", "Ada")  # the fake runner's times decide
    await asyncio.to_thread(browser.driver.find_element("css selector", "nav a[rel=next]").click)
    assert second in "".join(await browser.script(rows)) and (await browser.url()).endswith("?page=2")
    assert await browser.script("return document.querySelector('nav a[rel=next]')") is None  # the last page
    assert await browser.script(CONTRAST) == [] and await browser.script(OUTLINE) == [1]
    await asyncio.to_thread(browser.driver.find_element("css selector", "nav a[rel=prev]").click)
    assert leader in "".join(await browser.script(rows))
    await browser.sign_in(site.url, site.tokens[second.lower()], "/leaderboards/vectoradd/CPU")
    signed_in = await browser.script(rows)  # the viewer's own entry, below the page
    assert len(signed_in) == 2 and leader in signed_in[0] and f"{second} (you)" in signed_in[1]


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
    schedule_challenges(site)
    await browser.sign_in(site.url, site.tokens["ada"], "/")
    for path in (
        "/",
        "/challenges/Week%2048",
        "/challenges/Week%2047",
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
