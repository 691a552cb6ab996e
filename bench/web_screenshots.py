"""Screenshots of each web page, from a real headless Chromium against ``kernelrank up``.

    python bench/web_screenshots.py [--out docs/screenshots] [--phone]

Starts ``kernelrank up --backend fake`` in a fresh home (its own NATS, core, API on a free port and a worker that
answers at once) with the repository's problems, submits two kernels to vectoradd through the HTTP API with the
local user's token (an admin there), schedules a challenge on it, then opens the home page, the problem's page, a
ranking, the ranking across GPUs, the person's page, the challenge's page and the latest submission's page (signed
in through the form), then fills in the submit form, sends it and waits for its result, and writes one PNG per
page. ``--phone`` uses a 390-pixel-wide window. Needs Debian's ``chromium`` and ``chromium-driver`` and the
``selenium`` package (``make .venv/.system-packages``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "web"))

from browser_kit import Browser, missing  # noqa: E402

CHALLENGE = "Week 48: vectoradd"
KERNELS = (
    "def custom_kernel(data):\n    a, b = data\n    return a + b\n",
    "import torch\n\n\ndef custom_kernel(data):\n    a, b = data\n    return torch.add(a, b)\n",
)


def start(home: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "KERNELRANK_HOME": str(home),
        "KERNELRANK_API_PORT": "0",
        "KERNELRANK_USER": "ada",
        "KERNELRANK_ADMINS": "cli:ada",  # to schedule the challenge
        "KERNELRANK_PROBLEMS_DIR": str(REPO / "problems"),
        "PYTHONPATH": str(REPO),
    }
    env = {k: v for k, v in env.items() if not k.startswith(("DISCORD_", "SLACK_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "core.launch.main", "up", "--backend", "fake"],
        cwd=home,
        env=env,
        stdout=(home / "up.log").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for(path: Path, proc: subprocess.Popen, timeout_s: float = 120) -> str:
    deadline = time.monotonic() + timeout_s
    while not path.is_file():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"kernelrank up did not start: see {path.parents[1] / 'up.log'}")
        time.sleep(0.2)
    return path.read_text().strip()


def submit_and_wait(url: str, token: str) -> tuple[list[int], int]:
    """Submit the kernels, wait until each is judged; the submission ids and the local user's person id."""
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=auth, timeout=30) as http:
        ids = []
        for source in KERNELS:
            accepted = http.post(
                "/v1/submissions",
                json={"file_name": "add.py", "source": source, "leaderboard": "vectoradd", "gpus": ["CPU"]},
            )
            accepted.raise_for_status()
            ids.append(accepted.json()["data"]["submission_id"])
        for submission in ids:
            for _ in range(300):
                runs = http.get(f"/v1/submissions/{submission}").json()["data"]["runs"]
                if all(run["status"] not in ("queued", "running") for run in runs):
                    break
                time.sleep(0.2)
        closes = datetime.now(UTC) + timedelta(days=2, hours=5)
        http.post(
            "/v1/admin/challenges",
            json={"title": CHALLENGE, "leaderboards": "vectoradd", "closes": f"{closes:%Y-%m-%d %H:%M}"},
        ).raise_for_status()
        return ids, http.get("/v1/me").json()["data"]["person_id"]


async def shoot(url: str, token: str, ids: list[int], person: int, out: Path, phone: bool) -> list[Path]:
    browser = Browser(390, 844) if phone else Browser(1100, 900)
    suffix = "-phone" if phone else ""
    written = []
    try:
        pages = [
            ("home", "/"),
            ("problem", "/leaderboards/vectoradd"),
            ("ranking", "/leaderboards/vectoradd/CPU"),
            ("across-gpus", "/leaderboards/vectoradd/across-gpus"),
            ("person", f"/people/{person}"),
            ("challenge", f"/challenges/{quote(CHALLENGE)}"),
        ]
        for name, path in pages:
            await browser.get(url + path)
            written.append(out / f"web-{name}{suffix}.png")
            await browser.screenshot(str(written[-1]))
        await browser.sign_in(url, token, f"/submissions/{ids[-1]}")
        written.append(out / f"web-submission{suffix}.png")
        await browser.screenshot(str(written[-1]))
        await browser.get(url + "/submit?leaderboard=vectoradd")
        await browser.tab_to("#source")
        await browser.keys(KERNELS[-1])
        written.append(out / f"web-submit{suffix}.png")
        await browser.screenshot(str(written[-1]))
        await browser.script("document.querySelector('#submit-form button[type=submit]').click()")
        await browser.arrive(r"/submissions/\d+$")
        written.append(out / f"web-submit-result{suffix}.png")
        await browser.screenshot(str(written[-1]))
    finally:
        browser.close()
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--phone", action="store_true", help="a phone-sized window (390 x 844)")
    args = parser.parse_args()
    if reason := missing():
        raise SystemExit(f"cannot take screenshots: {reason}")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kernelrank-web-") as tmp:
        home = Path(tmp)
        proc = start(home)
        try:
            url = wait_for(home / "run" / "api.url", proc)
            token = wait_for(home / "run" / "api.token", proc)
            ids, person = submit_and_wait(url, token)
            for path in asyncio.run(shoot(url, token, ids, person, args.out, args.phone)):
                print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
