"""A loopback Discord for tests and for replaying real payloads: REST routes, gateway, recording.

    from tests.fakes.discord import FakeDiscord, payloads
    fake = FakeDiscord(record=Path("calls.jsonl")); await fake.start()
    ... point the bot at fake.api_base (KERNELRANK_DISCORD_API_BASE) with token fake.bot_token ...
    await fake.inject(payloads.slash(fake, ["leaderboard", "list"]))

Run on its own: ``python -m tests.fakes.discord --port 8123 --record calls.jsonl [--inject payload.json]``.
"""

from tests.fakes.discord.server import FakeDiscord, Interaction, running_fake

__all__ = ["FakeDiscord", "Interaction", "running_fake"]
