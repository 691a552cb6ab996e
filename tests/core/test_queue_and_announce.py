"""The core's queue report, pool reports, jobs-ahead counts, top-3 announcements and the eval-code listing."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from core.contracts.config import ConfigError
from core.contracts.messages import PartKind, Platform, PoolStatus
from core.service.announce import announcement_targets, announcements
from core.service.harness_source import eval_code_report, harness_files
from core.service.pools import PoolBoard
from core.service.queueing import place_runs, queue_report
from core.service.runs import InFlight, RunBook
from storage.records import RankRow, RunInfo

T0 = datetime(2026, 5, 1, tzinfo=UTC)


def run(
    run_id: str,
    gpu: str = "H100",
    person: int = 1,
    state: str = "queued",
    minutes: int = 0,
    leaderboard: str = "matmul",
) -> RunInfo:
    number = int(run_id[1:]) if run_id[1:].isdigit() else 0
    return RunInfo(
        run_id=run_id,
        submission_id=number,
        gpu=gpu,
        state=state,
        status=None,
        score_us=None,
        leaderboard=leaderboard,
        person_id=person,
        display_name=f"p{person}",
        mode="ranked",
        reply_to={},
        created_at=T0 + timedelta(minutes=minutes),
    )


def test_positions_count_only_waiting_runs_of_the_same_pool():
    runs = [run("r1", state="running"), run("r2"), run("r3", gpu="A100"), run("r4"), run("r5")]
    placed = place_runs(runs, started={"r4"})
    assert [(q.run.run_id, q.running, q.position) for q in placed] == [
        ("r1", True, 0),
        ("r2", False, 1),
        ("r3", False, 1),
        ("r4", True, 0),
        ("r5", False, 2),
    ]


async def test_queue_report_combines_the_store_the_started_runs_and_the_workers():
    clock = [100.0]
    board = PoolBoard(clock=lambda: clock[0], stale_after_s=30)
    await board.record(PoolStatus(gpu="H100", worker="w1", backend="modal", running=2, capacity=4, backlog=1))
    await board.record(PoolStatus(gpu="H100", worker="w2", backend="local", running=1, capacity=1))
    await board.record(PoolStatus(gpu="L4", worker="w3", backend="local", running=0, capacity=1))
    runs = [run("r1", person=2), run("r2", person=1), run("r3", person=2), run("r4", person=1, gpu="A100")]
    parts, data = queue_report(runs, {"r1"}, board.summary(), person_id=1)
    assert data["pools"]["H100"] == {"waiting": 2, "running": 1, "workers": 2, "capacity": 5, "backlog": 1}
    assert data["pools"]["L4"]["workers"] == 1 and data["pools"]["A100"]["workers"] == 0
    assert [(m["submission_id"], m["position"]) for m in data["mine"]] == [(2, 1), (4, 1)]
    text = "\n".join(" | ".join(r) for p in parts if p.kind is PartKind.TABLE for r in p.rows)
    assert "waiting, next in line" in text and "none reporting" in text
    assert any("backend queue" in p.text for p in parts)

    clock[0] += 31  # every worker went quiet: none is counted any more
    assert board.summary() == {}


def test_queue_report_when_nothing_is_queued():
    parts, data = queue_report([], set(), {}, person_id=1)
    assert data == {"pools": {}, "mine": []} and "Nothing is queued" in parts[0].text


def test_in_flight_counts_runs_per_pool_and_what_is_ahead_of_a_repeat():
    flight = InFlight()
    for name, gpu in [("a", "H100"), ("b", "L4"), ("c", "H100")]:
        flight[name] = run(name, gpu=gpu)
    assert [flight.ahead_of(r, "H100") for r in ("new", "c", "a")] == [2, 1, 0]
    assert flight.pop("a").run_id == "a" and flight.pop("a", None) is None
    del flight["b"]
    flight["c"] = run("c", gpu="L4")  # replaced: moves pools
    assert flight.ahead_of("new", "H100") == 0 and flight.ahead_of("new", "L4") == 1


def rank_rows(*entries: tuple[str, int, float]) -> dict[int, RankRow]:
    return {
        person: RankRow(
            rank=i + 1,
            person_id=person,
            display_name=f"p{person}",
            score_us=score,
            submission_id=i + 10,
            run_id=run_id,
            submitted_at=T0,
        )
        for i, (run_id, person, score) in enumerate(entries)
    }


def test_an_entry_into_the_top_3_is_announced_to_every_target_once():
    targets = announcement_targets(["discord:123", " slack:C9 "])
    assert [(t.platform, t.channel) for t in targets] == [(Platform.DISCORD, "123"), (Platform.SLACK, "C9")]
    standings = {
        ("matmul", "H100"): rank_rows(("old1", 1, 5.0), ("new", 2, 6.0), ("old3", 3, 7.0), ("x", 4, 8.0)),
        ("matmul", "L4"): rank_rows(("a", 1, 5.0), ("b", 2, 6.0), ("c", 3, 7.0), ("late", 4, 9.0)),
    }
    finished = [run("new", gpu="H100"), run("late", gpu="L4")]
    replies = announcements(finished, standings, targets)
    assert [r.reply_to.platform for r in replies] == [Platform.DISCORD, Platform.SLACK]  # L4's top 3 did not change
    first = replies[0]
    assert first.data["kind"] == "announcement" and first.data["gpu"] == "H100"
    assert [row[:2] for row in first.data["top"]] == [[1, "p1"], [2, "p2"], [3, "p3"]]
    assert "#2" in first.parts[0].text and first.id == announcements(finished, standings, targets)[0].id
    assert announcements(finished, standings, []) == []


@pytest.mark.parametrize("entry", ["discord", "teams:1", "slack:", ":123"])
def test_bad_announcement_targets_name_the_entry(entry):
    with pytest.raises(ConfigError, match="KERNELRANK_ANNOUNCE"):
        announcement_targets([entry])


def test_eval_code_lists_and_attaches_every_harness_file():
    files = harness_files()
    assert {"harness/timing.py", "harness/judge/checking.py", "harness/__init__.py"} <= {f.path for f in files}
    title, parts, data = eval_code_report()
    code = [p for p in parts if p.kind is PartKind.CODE]
    assert [p.filename for p in code] == data["files"] == [f.path for f in files]
    assert all(p.text for p in code) and len(data["sha256"]) == 64 and data["sha256"][:12] in title


def test_waiting_runs_hear_their_place_and_once_a_run_was_seen_whole_when_they_should_start():
    from core.service.queue_news import queue_news

    clock = [0.0]
    book = RunBook(clock=lambda: clock[0])
    to = {"platform": "discord", "channel": "c1", "user": "u1"}
    for run_id in ("r1", "r2", "r3"):
        book.waiting_for(replace(run(run_id, gpu="CPU"), reply_to=to))
    book.waiting_for(replace(run("r4", gpu="H100"), reply_to=to))
    book.mark_started({"r1"})
    news = queue_news(book, {"CPU"})  # r1 started: the runs behind it hear where they stand
    assert [(r.in_reply_to, r.update_key, r.final, r.parts[0].text) for r in news] == [
        ("r2", "r2", False, "CPU: queued (1 job ahead)"),
        ("r3", "r3", False, "CPU: queued (2 jobs ahead)"),
    ]
    clock[0] = 240.0  # r1 took 4 minutes
    book.result_arrived("r1")
    book.mark_started({"r2"})
    [r3] = queue_news(book, {"CPU"})
    assert r3.parts[0].text == "CPU: queued (1 job ahead, starts in about 4 min)"
    clock[0] = 300.0  # a minute into r2
    assert queue_news(book, {"CPU"})[0].parts[0].text.endswith("starts in about 3 min)")


def waiting_book(count: int, in_flight: InFlight | None = None) -> tuple[RunBook, list[float]]:
    """A run book (and its clock, to move) with runs r1 to r``count`` waiting on CPU, answered in a Discord channel."""
    clock = [0.0]
    book = RunBook(clock=lambda: clock[0])
    book.in_flight = in_flight if in_flight is not None else book.in_flight
    to = {"platform": "discord", "channel": "c1", "user": "u1"}
    for number in range(1, count + 1):
        book.waiting_for(replace(run(f"r{number}", gpu="CPU"), reply_to=to))
    return book, clock


def test_the_news_of_a_long_queue_reads_the_waiting_runs_once_not_once_per_run():
    from core.service.queue_news import queue_news

    class Counted(InFlight):
        reads = 0

        def values(self):  # type: ignore[override]
            Counted.reads += 1
            return super().values()

    book, clock = waiting_book(201, Counted())
    book.mark_started({"r1"})
    clock[0] = 60.0
    book.result_arrived("r1")  # a run seen whole: every waiting run gets an estimate
    book.mark_started({"r2"})
    news = queue_news(book, {"CPU"})
    assert len(news) == 199 and news[-1].parts[0].text == "CPU: queued (199 jobs ahead, starts in about 199 min)"
    assert Counted.reads <= 2  # the queue once, the pool's running runs once: not 200 times


def test_runs_far_back_in_a_long_queue_hear_when_they_moved_up_a_fifth_the_first_ten_every_move():
    from core.service.queue_news import queue_news

    book, clock = waiting_book(40)

    def start(run_id: str) -> dict[str, str]:
        clock[0] += 1.0  # a start a second: no news is held back (the next test)
        book.result_arrived(f"r{int(run_id[1:]) - 1}")
        book.mark_started({run_id})
        return {news.in_reply_to: news.parts[0].text for news in queue_news(book, {"CPU"})}

    assert len(start("r1")) == 39  # everyone hears their place once
    heard = start("r2")  # each waiting run moved up one place: only the first ten hear it
    assert list(heard) == [f"r{n}" for n in range(3, 12)] and heard["r11"] == "CPU: queued (9 jobs ahead)"
    heard = start("r3")
    assert "r25" not in heard  # 22 ahead: it heard at 24, and hears again once it moved up a fifth of that
    start("r4")
    heard = start("r5")
    assert heard["r25"] == "CPU: queued (20 jobs ahead)"


def test_a_pools_news_within_a_second_of_its_last_is_held_back_then_told():
    from core.service.queue_news import queue_news

    book, clock = waiting_book(5)
    book.mark_started({"r1"})
    assert len(queue_news(book, {"CPU"})) == 4  # everyone hears their place once
    clock[0] = 0.5
    book.result_arrived("r1")
    book.mark_started({"r2"})
    assert queue_news(book, {"CPU"}) == []  # half a second later: held back
    assert book.held_pools() == {"CPU"} and book.held_pools() == set()  # noted once
    clock[0] = 1.0
    heard = {news.in_reply_to: news.parts[0].text for news in queue_news(book, {"CPU"})}
    assert heard == {
        "r3": "CPU: queued (1 job ahead)",
        "r4": "CPU: queued (2 jobs ahead)",
        "r5": "CPU: queued (3 jobs ahead)",
    }
