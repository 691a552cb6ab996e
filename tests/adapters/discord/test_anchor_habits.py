"""The spellings people bring from the anchor's bot, in Discord through the real bot and the fake:
``leaderboard_name``, a comma list of GPUs, ``get-submission``, ``reference-code``, ``show-personal``;
``eval-code`` for one language."""

from __future__ import annotations

import asyncio

from discord_testkit import CORRECT, texts

from runners.fake import FakeRunner


async def test_leaderboard_name_and_a_comma_list_of_gpus_submit_and_query(make_system, make_bot):
    system = await make_system(FakeRunner(), pools=["CPU", "H100"])
    bot = await make_bot(system)
    await bot.submit(CORRECT, leaderboard_name="vectoradd", gpu="CPU,H100")
    for _ in range(300):
        if system.store.stats().runs == 2:
            break
        await asyncio.sleep(0.1)
    submission = 1  # the first of a fresh kernelrank
    detail = system.store.submission_detail(submission)
    assert detail.leaderboard == "vectoradd" and sorted(r.info.gpu for r in detail.runs) == ["CPU", "H100"]

    shown = texts(await bot.answer(await bot.slash(["leaderboard", "show"], {"leaderboard_name": "vectoradd"})))
    assert "vectoradd on CPU" in shown
    for path, options, expected in (
        (["leaderboard", "reference-code"], {"leaderboard_name": "vectoradd"}, "reference.py"),
        (["leaderboard", "show-personal"], {"leaderboard_name": "vectoradd"}, f"#{submission}"),
        (["leaderboard", "get-submission"], {"id": submission}, f"Submission #{submission}"),
    ):
        answer = await bot.answer(await bot.slash(path, options))
        words = texts(answer) + " ".join(f["filename"] for f in answer.json.get("attachments") or [])
        assert expected in words, (path, words[:300])
    missing = texts(await bot.answer(await bot.slash(["leaderboard", "show"], {})))
    assert "Name a leaderboard" in missing


async def test_eval_code_for_one_language(make_system, make_bot):
    bot = await make_bot(await make_system(FakeRunner()))
    cuda = await bot.answer(await bot.slash(["leaderboard", "eval-code"], {"lang": "cuda"}))
    names = [f["filename"] for f in cuda.json.get("attachments") or []]
    assert "cu_judge.cu" in " ".join(names) and not any(n.endswith(".py") for n in names), names
