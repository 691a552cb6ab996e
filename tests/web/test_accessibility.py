"""axe-core, the accessibility checker, injected into every page type in a real Chromium at a desktop's width and a
phone's: no serious or critical finding. (Keyboard-only submission is in test_submit.py.)"""

from __future__ import annotations

import pytest
from browser_kit import AXE, Browser, Site
from test_pages import schedule_challenges

WIDTHS = (1280, 390)


@pytest.fixture
def axe_or_skip() -> None:
    if not AXE.is_file():
        pytest.skip(f"{AXE} is missing: `make test` installs it (npm install --prefix tests/web)")


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
        "refusal": "/leaderboards/nothing-here",
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
                if findings := await browser.axe():
                    found[f"{kind} at {width} px"] = findings
    assert found == {}
