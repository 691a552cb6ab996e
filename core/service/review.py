"""``admin review``: the cases waiting for an admin, one case with everything to judge it, and the decision.

A submission is an open *case* while it has an open report (``report``), a ranked run the static pre-check held
(``harness.host.precheck``: stored with its score, not ranked), or a podium entry that a challenge's verification held
(``core.service.podium``; kept in the challenge's results), with no decision since it was held.
``admin review`` lists them; ``admin review SUBMISSION`` shows one: the reports, the hold and the verifier's re-run,
each run's per-shape figures (median, mean, 95 % interval, % of the roofline peak where the problem gives it) and
the source. ``--decide cheat`` invalidates the submission through ``admin.invalidate_submission`` (out of every
ranking, kept in history, marked); ``--decide fine`` dismisses its reports, lets its held runs count in the
ranking, and clears its podium hold (the challenge's announced results stay as they are). Either closes the case and
goes to the audit log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from core.contracts import reply_parts
from core.contracts.errors import NotFound, UserError
from core.contracts.messages import Command, Part, Reply
from core.service.admin import invalidate_submission
from core.service.args import int_arg, language, reply
from core.service.deps import Deps
from core.service.people import Caller
from core.service.reports import reason_arg
from harness.result import EvalResult
from storage.records import HeldRun, Report, SubmissionDetail

_CHEAT_NOTE = "a cheat, confirmed in review"


@dataclass
class Case:
    submission_id: int
    reports: list[Report] = field(default_factory=list)
    held: list[dict[str, Any]] = field(default_factory=list)  # podium entries, with their challenge and close
    held_runs: list[HeldRun] = field(default_factory=list)  # runs the pre-check held

    @property
    def since(self) -> datetime:
        return min(
            [r.created_at for r in self.reports]
            + [h["closed_at"] for h in self.held]
            + [run.finished_at for run in self.held_runs]
        )


async def review(cmd: Command, caller: Caller, deps: Deps) -> Reply:
    decision = str(cmd.args.get("decide") or "")
    if not cmd.args.get("id"):
        if decision:
            raise UserError("Name the submission to decide, like `admin review 12 --decide cheat`.")
        return await _listed(cmd, deps)
    sub_id = int_arg(cmd, "id", "submission id")
    if decision:
        return await _decide(cmd, caller, deps, sub_id, decision)
    return await _one(cmd, deps, sub_id)


async def open_cases(deps: Deps) -> dict[int, Case]:
    """Every open case by submission, oldest first."""
    cases: dict[int, Case] = {}
    for open_report in await deps.db.read(deps.db.store.reports.open):
        cases.setdefault(open_report.submission_id, Case(open_report.submission_id)).reports.append(open_report)
    decided = await deps.db.read(deps.db.store.reports.last_decisions)

    def undecided(sub_id: int, held_at: datetime) -> bool:  # a decision before a hold does not clear it
        return sub_id not in decided or decided[sub_id] < held_at

    for run in await deps.db.read(deps.db.store.reports.held_runs):
        if undecided(run.submission_id, run.finished_at):
            cases.setdefault(run.submission_id, Case(run.submission_id)).held_runs.append(run)
    for entry in await held_entries(deps):
        if undecided(entry["submission_id"], entry["closed_at"]):
            cases.setdefault(entry["submission_id"], Case(entry["submission_id"])).held.append(entry)
    return dict(sorted(cases.items(), key=lambda item: item[1].since))


async def held_entries(deps: Deps) -> list[dict[str, Any]]:
    """Every podium entry a challenge's verification held, with the challenge's title and close."""
    held = []
    for ch in deps.db.store.challenges.listed():
        results = ch.results or {}
        closed_at = datetime.fromisoformat(results["closed_at"]) if "closed_at" in results else ch.closes_at
        for board in results.get("boards", []):
            held += [
                {
                    **entry,
                    "leaderboard": board["leaderboard"],
                    "gpu": board["gpu"],
                    "challenge": ch.title,
                    "closed_at": closed_at,
                }
                for entry in board["podium"]
                if entry["verdict"] == "held"
            ]
    return held


async def _listed(cmd: Command, deps: Deps) -> Reply:
    cases = await open_cases(deps)
    if not cases:
        return reply(
            cmd,
            "Review",
            [reply_parts.text("No open cases: nothing is reported, and no run or podium entry is held.")],
            data={"cases": []},
        )
    now, rows, data = deps.now(), [], []
    for case in cases.values():
        detail = await deps.db.read(deps.db.store.submission_detail, case.submission_id)
        gpu, score = _headline(case, detail)
        why = _why(case)
        row = {
            "submission_id": case.submission_id,
            "leaderboard": detail.leaderboard if detail else None,
            "gpu": gpu,
            "person_id": detail.person_id if detail else None,
            "author": detail.display_name if detail else None,
            "score_us": score,
            "why": why,
            "reports": len(case.reports),
            "held": len(case.held),
            "held_runs": len(case.held_runs),
            "since": case.since.isoformat(),
        }
        data.append(row)
        rows.append(
            [
                f"#{case.submission_id}",
                row["leaderboard"] or "(gone)",
                gpu or "-",
                row["author"] or "-",
                reply_parts.format_us(score),
                reply_parts.clip(why, 90),
                _age(now - case.since),
            ]
        )
    return reply(
        cmd,
        "Review",
        [
            reply_parts.table(["submission", "leaderboard", "GPU", "who", "score", "why", "waiting"], rows),
            reply_parts.text("`admin review SUBMISSION` shows one case with its source and figures."),
        ],
        data={"cases": data},
    )


async def _one(cmd: Command, deps: Deps, sub_id: int) -> Reply:
    detail = await deps.db.read(deps.db.store.submission_detail, sub_id)
    if detail is None:
        raise NotFound(f"There is no submission #{sub_id}; `admin review` lists the open cases.")
    case = (await open_cases(deps)).get(sub_id)
    reports = await deps.db.read(deps.db.store.reports.of_submission, sub_id)
    held = [entry for entry in await held_entries(deps) if entry["submission_id"] == sub_id]
    held_runs = await deps.db.read(deps.db.store.reports.held_runs, sub_id)
    invalid = await deps.db.read(deps.db.store.admin.invalid_reason, sub_id)
    state = f"invalidated ({invalid})" if invalid else "open" if case else "no open case"
    parts = [
        reply_parts.text(
            f"**#{sub_id}**, {detail.file_name} by {detail.display_name} to {detail.leaderboard}, submitted "
            f"{detail.created_at:%Y-%m-%d %H:%M} UTC: {state}."
        ),
        *_reports_parts(reports),
        *_held_parts(held),
    ]
    for run in detail.runs:
        if run.result is not None:
            result = EvalResult.from_dict(run.result)
            parts += [
                reply_parts.text(f"**On {run.info.gpu}** (run {run.info.run_id[:8]})"),
                *reply_parts.verdict_parts(result),
                *reply_parts.detail_parts(result),
            ]
    parts.append(reply_parts.code(detail.source, language(detail.file_name), filename=detail.file_name))
    if case:
        parts.append(reply_parts.text(f"Decide with `admin review {sub_id} --decide cheat|fine --note TEXT`."))
    return reply(
        cmd,
        f"Review of #{sub_id}",
        parts,
        data={
            "submission_id": sub_id,
            "open": case is not None,
            "leaderboard": detail.leaderboard,
            "person_id": detail.person_id,
            "author": detail.display_name,
            "file_name": detail.file_name,
            "source": detail.source,
            "invalidated": invalid,
            "reports": [_report_data(r) for r in reports],
            "held": [{**entry, "closed_at": entry["closed_at"].isoformat()} for entry in held],
            "held_runs": [
                {"run_id": r.run_id, "gpu": r.gpu, "score_us": r.score_us, "why": r.message} for r in held_runs
            ],
            "runs": [
                {
                    "gpu": r.info.gpu,
                    "status": r.info.status or r.info.state,
                    "score_us": r.info.score_us,
                    "result": r.result,
                }
                for r in detail.runs
            ],
        },
    )


async def _decide(cmd: Command, caller: Caller, deps: Deps, sub_id: int, decision: str) -> Reply:
    if decision not in ("cheat", "fine"):
        raise UserError("Decide with --decide cheat (invalidate it) or --decide fine (dismiss the case).")
    note = reason_arg(cmd, "note", "note")
    case = (await open_cases(deps)).get(sub_id)
    if case is None:
        raise UserError(
            f"#{sub_id} has no open case (no open report, no held run or podium entry); `admin review` lists them."
        )
    released = 0
    if decision == "cheat":
        closed = await invalidate_submission(deps, caller, sub_id, note or _CHEAT_NOTE, action="review cheat")
        words = (
            f"#{sub_id} is invalidated: out of every ranking, kept in history and marked; {_closed(closed, case)}. "
            "Add its trick to the cheat catalogue's tests (docs/integrity.md says how)."
        )
    else:
        released = await deps.db.write(deps.db.store.reports.release_held_runs, sub_id)
        closed = await deps.db.write(deps.db.store.reports.decide, sub_id, "fine", note, caller.signature, deps.now())
        detail = {"submission": sub_id, "note": note, "reports_closed": closed, "held_cleared": len(case.held)}
        await deps.db.write(deps.db.store.audit, caller.signature, "review fine", detail | {"runs_released": released})
        counts = f" {released} held run{'s' if released > 1 else ''} of it now in the ranking." if released else ""
        words = f"#{sub_id} is fine; {_closed(closed, case)}.{counts}"
    return reply(
        cmd,
        f"#{sub_id}: {decision}",
        [reply_parts.text(words)],
        data={
            "submission_id": sub_id,
            "decision": decision,
            "reports_closed": closed,
            "held_cleared": len(case.held),
            "runs_released": released,
        },
    )


def _headline(case: Case, detail: SubmissionDetail | None) -> tuple[str | None, float | None]:
    """The GPU and score the case is about: the held entry's or run's, else the submission's best passed run."""
    if case.held:
        return case.held[0]["gpu"], case.held[0]["score_us"]
    if case.held_runs:
        return case.held_runs[0].gpu, case.held_runs[0].score_us
    runs = detail.runs if detail else []
    passed = [(r.info.score_us, r.info.gpu) for r in runs if r.info.status == "passed" and r.info.score_us]
    if not passed:
        return ", ".join(r.info.gpu for r in runs) or None, None
    score, gpu = min(passed)
    return gpu, score


def _why(case: Case) -> str:
    held = [f"held at the close of {h['challenge']}: {h['reason']}" for h in case.held]
    checked = [f"on {run.gpu}: {run.message}" for run in case.held_runs]  # "Held for review: ..." already
    reported = [f"reported: {r.reason}" for r in case.reports]
    return "; ".join(held + checked + reported)


def _reports_parts(reports: list[Report]) -> list[Part]:
    if not reports:
        return []
    rows = [
        [f"{r.created_at:%Y-%m-%d %H:%M}", r.reporter_name, reply_parts.clip(r.reason, 200), r.resolution or "open"]
        for r in reports
    ]
    return [reply_parts.text("**Reports**"), reply_parts.table(["when", "who", "reason", "state"], rows)]


def _held_parts(held: list[dict[str, Any]]) -> list[Part]:
    if not held:
        return []
    rows = [
        [
            h["challenge"],
            h["gpu"],
            h["rank"],
            reply_parts.format_us(h["score_us"]),
            f"{reply_parts.format_us(h['interval'][0])} to {reply_parts.format_us(h['interval'][1])}",
            reply_parts.format_us(h["rerun_us"]),
            h["reason"],
        ]
        for h in held
    ]
    return [
        reply_parts.text("**Held by the podium's verification** (a re-run with a fresh secret seed)"),
        reply_parts.table(["challenge", "GPU", "rank", "score", "interval", "re-run", "why"], rows),
    ]


def _report_data(r: Report) -> dict[str, Any]:
    return {
        "reporter_id": r.reporter_id,
        "reporter": r.reporter_name,
        "reason": r.reason,
        "at": r.created_at.isoformat(),
        "resolution": r.resolution,
    }


def _closed(reports: int, case: Case) -> str:
    closed = [f"{reports} report{'' if reports == 1 else 's'}"] if reports else []
    if case.held:
        closed.append(f"{len(case.held)} held podium entr{'y' if len(case.held) == 1 else 'ies'}")
    if case.held_runs:
        closed.append(f"{len(case.held_runs)} held run{'' if len(case.held_runs) == 1 else 's'}")
    return " and ".join(closed) + " closed"


def _age(waited: timedelta) -> str:
    minutes = int(waited.total_seconds()) // 60
    days, hours = minutes // 1440, minutes % 1440 // 60
    return f"{days} d {hours} h" if days else f"{hours} h {minutes % 60} min" if hours else f"{max(minutes, 0)} min"
