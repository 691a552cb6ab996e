"""The terminal client's conventions as a person meets them: a `kernelrank` subprocess against the API process."""

from __future__ import annotations

import json

from api_kit import kernelrank, serving_api, token_of

from core.contracts.version import __version__
from runners.fake import FakeRunner


async def test_json_on_read_commands_and_colour_on_request(make_system, nats_url, tmp_path):
    system = await make_system(FakeRunner())
    token = await token_of(system, "ada")
    async with serving_api(system.settings, nats_url) as url:
        signed_in = {"KERNELRANK_API_URL": url, "KERNELRANK_TOKEN": token}
        code, out = await kernelrank(tmp_path, "list", "--json", **signed_in)
        assert code == 0 and json.loads(out)["leaderboards"][0]["name"] == "vectoradd"
        code, out = await kernelrank(tmp_path, "show", "vectoradd", "--json", **signed_in)
        assert code == 0 and json.loads(out)["leaderboard"] == "vectoradd"
        code, out = await kernelrank(tmp_path, "list", FORCE_COLOR="1", **signed_in)
        assert code == 0 and "\033[" in out
        code, out = await kernelrank(tmp_path, "list", FORCE_COLOR="1", NO_COLOR="1", **signed_in)
        assert code == 0 and "\033" not in out and "vectoradd" in out


async def test_status_shows_the_api_the_core_and_the_pools(make_system, nats_url, tmp_path):
    system = await make_system(FakeRunner())
    token = await token_of(system, "ada")
    async with serving_api(system.settings, nats_url) as url:
        code, out = await kernelrank(tmp_path, "status", KERNELRANK_API_URL=url, KERNELRANK_TOKEN=token)
        assert code == 0 and "core: ok" in out and f"this client {__version__}" in out, out
        code, out = await kernelrank(tmp_path, "status", "--json", KERNELRANK_API_URL=url)
        assert code == 0 and json.loads(out)["core"] == "ok" and json.loads(out)["pools"] == {}, out  # no token
    code, out = await kernelrank(tmp_path, "status", KERNELRANK_API_URL=url)
    assert code == 1 and "API at" in out and "unreachable" in out
