"""Notices for the admins: a new report, podium entries held at a challenge's close.

``KERNELRANK_ADMIN_CHANNELS`` lists the channels (``platform:channel``, as ``KERNELRANK_ANNOUNCE``); they should be
channels only admins read, since a notice names the reporter. Without any, the cases wait in ``admin review``
unannounced. A notice is shaped as an announcement (a post in the channel, no thread), with an id made from
what it is about, so publishing it twice shows it once.
"""

from __future__ import annotations

from core.contracts.messages import Part, Reply, Tone
from core.service.announce import announcement_targets
from core.service.deps import Deps

SETTING = "KERNELRANK_ADMIN_CHANNELS"


async def tell_admins(deps: Deps, action: str, about: int, title: str, parts: list[Part]) -> None:
    """Post a notice of ``action`` ("report", "held") on ``about`` (the report's or the challenge's id)."""
    for target in announcement_targets(deps.settings.admin_channels, SETTING):
        await deps.publish_reply(
            Reply(
                reply_to=target,
                title=title,
                parts=parts,
                tone=Tone.WARNING,
                data={"kind": "announcement", "audience": "admins", "action": action},
                id=f"admins-{action}-{about}-{target.platform.value}-{target.channel}",
            )
        )
