"""axe-core, the accessibility checker, injected into every page type in a real Chromium at a desktop's width and a
phone's: no serious or critical finding. (Keyboard-only submission is in test_submit.py.)"""

from __future__ import annotations

import pytest
from browser_kit import AXE, Browser, Site
from test_pages import schedule_challenges

from adapters.api.web_submit import progress_address
from core.service.bootstrap import utc_now as now
from storage.records import NewSubmission

WIDTHS = (1280, 390)


@pytest.fixture
def axe_or_skip() -> None:
    if not AXE.is_file():
        pytest.skip(f"{AXE} is missing: `make test` installs it (npm install --prefix tests/web)")


def waiting_submission(site: Site) -> str:
    """The progress page of a submission of Ada's whose run waits (stored, never queued: no worker takes it)."""
    person = site.person_ids["ada"]
    run = NewSubmission("waits", person, "vectoradd", "k.py", "x = 1\n", "test", [("run-waits", "CPU")], {}, now())
    (stored,) = site.system.store.add_submissions([run])
    return progress_address(site.tokens["ada"], stored.id, "route-waits", "run-waits")


def page_types(site: Site) -> dict[str, str]:
    """Every kind of page kernelrank serves, by one address of each."""
    return {
        "home": "/",
        "problem": "/leaderboards/vectoradd",
        "ranking": "/leaderboards/vectoradd/CPU",
        "ranking across GPUs": "/leaderboards/vectoradd/across-gpus",
        "person": f"/people/{site.person_ids['ada']}",
        "submission": f"/submissions/{site.submissions['ada'][-1]}",
        "open challenge": "/challenges/Week%2048",
        "closed challenge": "/challenges/Week%2047",
        "submit: choose a leaderboard": "/submit",
        "submit": "/submit?leaderboard=vectoradd",
        "a submission's progress": waiting_submission(site),
        "refusal": "/leaderboards/nothing-here",
        "page not found": "/no-such-page",
    }


async def test_no_page_has_a_serious_accessibility_finding(axe_or_skip, site: Site, browser: Browser) -> None:
    schedule_challenges(site)
    found: dict[str, list[str]] = {}
    for signed_in in (False, True):  # the sign-in page for a visitor; the rest as a signed-in person sees them
        pages = page_types(site) if signed_in else {"sign-in": "/sign-in"}
        if signed_in:
            await browser.sign_in(site.url, site.tokens["ada"], "/")
        for width in WIDTHS:
            await browser.resize(width)
            for kind, path in pages.items():
                await browser.get(site.url + path)
                assert await browser.url() == site.url + path, kind  # the page itself, not a redirect
                if findings := await browser.axe():
                    found[f"{kind} at {width} px"] = findings
    assert found == {}
