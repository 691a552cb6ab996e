"""``admin create|update|close|reopen|delete`` called directly: a DuckDB file, a job collector, real problem files.

The reference's test run is answered here with a result built by hand (``validation.finished`` is what the service
loop calls); tests/e2e/test_leaderboard_admin.py runs it for real on a CPU worker.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from core.contracts.config import Settings
from core.contracts.messages import Actor, Attachment, Command, CommandKind, Platform, Reply, ReplyTo, RunResult
from core.service import validation
from core.service.bootstrap import build_deps
from core.service.db import Database
from core.service.deps import Deps
from core.service.handlers import dispatch
from core.service.problem_files import MAX_FILES, MAX_UNPACKED_BYTES
from harness.result import EvalResult, Failure, FailureKind, Mode, Status
from storage.store import Store

PROBLEMS = Path(__file__).parents[2] / "problems"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


class Collected(list):
    async def publish(self, job) -> bool:
        self.append(job)
        return True


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Deps, Collected, Clock]]:
    settings = Settings(home=tmp_path / "var", problems_dir=tmp_path / "none", admins=["discord:boss"])
    db = Database(Store(settings.database))
    jobs, clock = Collected(), Clock()
    deps = build_deps(db, settings, jobs.publish, now=clock, gpu_pools=("CPU",))
    yield deps, jobs, clock
    await deps.writer.close()
    await db.close()


def tar_of(folder: Path, *extra: Path) -> bytes:
    """``folder`` packed as the terminal packs it: FOLDER/... with the shared files it names beside it."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        archive.add(folder, arcname=folder.name)
        for path in extra:
            archive.add(path, arcname=path.name)
    return out.getvalue()


def identity_archive() -> Attachment:
    return Attachment("identity.tar.gz", tar_of(PROBLEMS / "identity", PROBLEMS / "utils.py"))


def cpu_only_identity(tmp_path: Path) -> Attachment:
    """problems/identity declaring ``devices: [cpu]``: no GPU pool is of use to it."""
    folder = tmp_path / "identity"
    shutil.copytree(PROBLEMS / "identity", folder)
    task = folder / "task.yml"
    task.write_text(task.read_text().replace("devices: [cpu, cuda]", "devices: [cpu]"))
    return Attachment("identity.tar.gz", tar_of(folder, PROBLEMS / "utils.py"))


async def ask(deps: Deps, user: str, kind: CommandKind, attachment: Attachment | None = None, **args) -> Reply:
    cmd = Command(
        actor=Actor(Platform.DISCORD, user, user.title()),
        reply_to=ReplyTo(Platform.DISCORD, "c1"),
        kind=kind,
        args=args,
        attachment=attachment,
    )
    return await dispatch(cmd, deps)


def passed(run_id: str) -> RunResult:
    return RunResult(
        run_id=run_id, submission_id=0, gpu="CPU", result=EvalResult(status=Status.PASSED, mode=Mode.TEST, problem="x")
    )


async def created(deps: Deps, jobs: Collected, name: str = "weekly", **args) -> Reply:
    checking = await ask(deps, "boss", CommandKind.BOARD_CREATE, identity_archive(), name=name, **args)
    assert checking.data.get("state") == "validating", checking
    opened = await validation.finished(passed(checking.data["validation_run"]), deps)
    assert opened is not None and opened.data["state"] == "open", opened
    return opened


async def test_create_runs_the_reference_once_then_opens_without_a_restart(env) -> None:
    deps, jobs, _ = env
    checking = await ask(
        deps,
        "boss",
        CommandKind.BOARD_CREATE,
        identity_archive(),
        name="weekly",
        deadline="2026-11-27 12:00",
        description="copy a vector, fast",
    )
    assert checking.data["state"] == "validating" and not checking.final
    assert "The outcome follows here" in checking.parts[0].text  # where it comes: the thread, channel or terminal
    [job] = jobs
    assert job.gpu == "CPU" and job.job.mode is Mode.TEST and job.job.submission_source.endswith(validation.SUFFIX)
    assert job.job.secret_seed is None  # a test run never carries the seed
    listed = await ask(deps, "ada", CommandKind.LIST)
    assert listed.data["leaderboards"] == []  # nothing stored while it is checked
    opened = await validation.finished(passed(job.run_id), deps)
    assert opened.data["state"] == "open" and opened.reply_to.channel == "c1"
    listed = await ask(deps, "ada", CommandKind.LIST)
    [board] = listed.data["leaderboards"]
    assert board["name"] == "weekly" and board["deadline"].startswith("2026-11-27T12:00") and board["version"] == 1
    assert "1 d 0 h left" in str(listed.parts)
    task = await ask(deps, "ada", CommandKind.TASK, leaderboard="weekly")
    assert "reference.py" in str(task.parts) and "utils.py" in str(task.parts)
    audit = deps.db.store._con.execute("SELECT actor, action FROM audit_log").fetchall()
    assert audit == [("Boss (person 1)", "leaderboard create")]


async def test_a_failing_reference_run_refuses_the_problem_and_stores_nothing(env) -> None:
    deps, jobs, _ = env
    checking = await ask(deps, "boss", CommandKind.BOARD_CREATE, identity_archive(), name="weekly")
    failure = EvalResult(
        status=Status.ERROR,
        mode=Mode.TEST,
        problem="weekly",
        stderr="ValueError: boom",
        failure=Failure(kind=FailureKind.EXCEPTION, message="ref_kernel raised ValueError"),
    )
    refused = await validation.finished(RunResult(checking.data["validation_run"], 0, "CPU", failure), deps)
    assert refused.data["state"] == "refused" and "ref_kernel raised ValueError" in refused.parts[0].text
    assert (await ask(deps, "ada", CommandKind.LIST)).data["leaderboards"] == []
    assert not await deps.db.read(deps.db.store.leaderboard_name_taken, "weekly")
    again = await ask(deps, "boss", CommandKind.BOARD_CREATE, identity_archive(), name="weekly")  # name is free
    assert again.data["state"] == "validating", again


def _zip(members: dict[str, bytes], links: tuple[str, ...] = ()) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o120777 << 16  # a symbolic link
            archive.writestr(info, "/etc/passwd")
    return out.getvalue()


def _tar_with_link() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        link = tarfile.TarInfo("p/reference.py")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    return out.getvalue()


REFERENCE = (PROBLEMS / "identity" / "reference.py").read_bytes()
TASK = (PROBLEMS / "identity" / "task.yml").read_text()


@pytest.mark.parametrize(
    ("attachment", "words"),
    [
        (Attachment("reference.py", b"def ref_kernel(data):\n    return data\n"), "defines no generate_input"),
        (Attachment("p.zip", _zip({"p/task.yml": b"files: [oops", "p/reference.py": REFERENCE})), "task.yml"),
        (Attachment("p.zip", _zip({"../evil/reference.py": REFERENCE})), "a path outside its own folder"),
        (Attachment("p.zip", _zip({"/abs/reference.py": REFERENCE})), "a path outside its own folder"),
        (Attachment("p.zip", _zip({}, links=("p/reference.py",))), "holds a link"),
        (Attachment("p.tar.gz", _tar_with_link()), "not a plain file or folder"),
        (Attachment("p.zip", _zip({"p/big.bin": b"\0" * (MAX_UNPACKED_BYTES + 1)})), "unpacks to more than"),
        (
            Attachment("p.zip", _zip({f"p/f{i}.txt": b"x" for i in range(MAX_FILES + 1)})),
            f"more than {MAX_FILES} files",
        ),
        (
            Attachment(
                "p.zip",
                _zip(
                    {"p/task.yml": TASK.replace("../utils.py", "/etc/hostname").encode(), "p/reference.py": REFERENCE}
                ),
            ),
            "a file outside the archive",
        ),
        (Attachment("p.rar", b"Rar!"), "attach a reference.py, or a .zip or .tar.gz"),
    ],
)
async def test_a_broken_or_unsafe_problem_is_refused_in_one_sentence_and_nothing_is_created(
    env, attachment: Attachment, words: str
) -> None:
    deps, jobs, _ = env
    refused = await ask(deps, "boss", CommandKind.BOARD_CREATE, attachment, name="broken")
    assert refused.data.get("error") == "invalid" and words in refused.parts[0].text, refused.parts[0].text
    assert jobs == [] and not await deps.db.read(deps.db.store.leaderboard_name_taken, "broken")
    assert not deps.validations.waiting_for("broken")


async def test_a_participant_is_refused_and_bad_settings_are_named(env) -> None:
    deps, jobs, _ = env
    refused = await ask(deps, "ada", CommandKind.BOARD_CREATE, identity_archive(), name="weekly")
    assert refused.data["error"] == "forbidden" and "Only admins" in refused.parts[0].text
    for args, words in [
        ({"name": "bad name!"}, "cannot name a leaderboard"),
        ({"name": "w", "deadline": "tomorrow"}, 'Give --deadline as "YYYY-MM-DD HH:MM"'),
        ({"name": "w", "deadline": "2026-11-25 12:00"}, "has passed already"),
        ({"name": "w", "gpu": ["H100"]}, "does not offer H100"),
        ({"name": "w", "opens": "2026-11-28 00:00", "deadline": "2026-11-27 00:00"}, "after its deadline"),
        ({"name": "w", "description": "x" * 20_000}, "The description is 20,000 characters long"),
    ]:
        reply = await ask(deps, "boss", CommandKind.BOARD_CREATE, identity_archive(), **args)
        assert words in reply.parts[0].text, (args, reply.parts[0].text)
    assert jobs == []
    missing = await ask(deps, "boss", CommandKind.BOARD_CREATE, None, name="w")
    assert "Attach the problem" in missing.parts[0].text


async def test_update_makes_a_new_version_and_earlier_runs_keep_theirs(env) -> None:
    deps, jobs, clock = env
    await created(deps, jobs)
    source = b"def custom_kernel(data):\n    return data.clone()\n"
    first = await dispatch(
        Command(
            Actor(Platform.DISCORD, "ada", "Ada"),
            ReplyTo(Platform.DISCORD, "c1"),
            CommandKind.SUBMIT,
            {"leaderboard": "weekly", "mode": "test"},
            Attachment("k.py", source),
        ),
        deps,
    )
    clock.now += timedelta(minutes=5)
    checking = await ask(deps, "boss", CommandKind.BOARD_UPDATE, identity_archive(), leaderboard="weekly")
    assert checking.data["version"] == 2
    await validation.finished(passed(checking.data["validation_run"]), deps)
    clock.now += timedelta(minutes=5)
    second = await dispatch(
        Command(
            Actor(Platform.DISCORD, "ada", "Ada"),
            ReplyTo(Platform.DISCORD, "c1"),
            CommandKind.SUBMIT,
            {"leaderboard": "weekly", "mode": "test"},
            Attachment("k.py", source),
        ),
        deps,
    )
    versions = [
        (await ask(deps, "ada", CommandKind.SUBMISSION, id=r.data["submission_id"])).data["problem_version"]
        for r in (first, second)
    ]
    assert versions == [1, 2]
    settings = await ask(deps, "boss", CommandKind.BOARD_UPDATE, leaderboard="weekly", deadline="2026-12-01 18:00")
    assert "until 2026-12-01 18:00 UTC" in settings.parts[0].text and "version 2" in settings.parts[0].text
    nothing = await ask(deps, "boss", CommandKind.BOARD_UPDATE, leaderboard="weekly")
    assert "Nothing to change" in nothing.parts[0].text


async def test_close_refuses_ranked_runs_with_the_date_and_keeps_test_runs_then_reopen(env) -> None:
    deps, jobs, clock = env
    await created(deps, jobs)
    closed = await ask(deps, "boss", CommandKind.BOARD_CLOSE, leaderboard="weekly")
    assert closed.data["state"] == "closed"
    clock.now += timedelta(minutes=1)
    source = Attachment("k.py", b"def custom_kernel(data):\n    return data.clone()\n")
    actor, where = Actor(Platform.DISCORD, "ada", "Ada"), ReplyTo(Platform.DISCORD, "c1")
    ranked = await dispatch(Command(actor, where, CommandKind.SUBMIT, {"leaderboard": "weekly"}, source), deps)
    assert "closed on 2026-11-26 12:00 UTC" in ranked.parts[0].text and "--mode test" in ranked.parts[0].text
    tested = await dispatch(
        Command(actor, where, CommandKind.SUBMIT, {"leaderboard": "weekly", "mode": "test"}, source), deps
    )
    assert "after the deadline: not ranked" in tested.parts[0].text and tested.data["ranked"] is False
    reopened = await ask(deps, "boss", CommandKind.BOARD_REOPEN, leaderboard="weekly", deadline="2026-12-03 10:00")
    assert reopened.data["state"] == "open"
    again = await dispatch(Command(actor, where, CommandKind.SUBMIT, {"leaderboard": "weekly"}, source), deps)
    assert again.data.get("ranked") is True, again


async def test_opens_in_the_future_refuses_until_then(env) -> None:
    deps, jobs, clock = env
    await created(deps, jobs, opens="2026-11-26 13:00")
    source = Attachment("k.py", b"def custom_kernel(data):\n    return data.clone()\n")
    cmd = Command(
        Actor(Platform.DISCORD, "ada", "Ada"),
        ReplyTo(Platform.DISCORD, "c1"),
        CommandKind.SUBMIT,
        {"leaderboard": "weekly"},
        source,
    )
    assert "opens on 2026-11-26 13:00 UTC" in (await dispatch(cmd, deps)).parts[0].text
    clock.now += timedelta(hours=1)
    cmd.id += "-later"
    assert (await dispatch(cmd, deps)).data.get("ranked") is True


async def test_delete_asks_to_confirm_then_hides_or_purges(env) -> None:
    deps, jobs, _ = env
    await created(deps, jobs)
    asked = await ask(deps, "boss", CommandKind.BOARD_DELETE, leaderboard="weekly")
    assert asked.data["state"] == "confirm" and "--confirm weekly" in asked.parts[0].text
    assert len((await ask(deps, "ada", CommandKind.LIST)).data["leaderboards"]) == 1
    hidden = await ask(deps, "boss", CommandKind.BOARD_DELETE, leaderboard="weekly", confirm="weekly")
    assert hidden.data["state"] == "deleted"
    assert (await ask(deps, "ada", CommandKind.LIST)).data["leaderboards"] == []
    assert (await ask(deps, "ada", CommandKind.SHOW, leaderboard="weekly")).data["error"] == "not_found"
    taken = await ask(deps, "boss", CommandKind.BOARD_CREATE, identity_archive(), name="weekly")
    assert "weekly was deleted and keeps its history: `admin reopen weekly` brings it back" in taken.parts[0].text
    await created(deps, jobs, name="other")
    purged = await ask(deps, "boss", CommandKind.BOARD_DELETE, leaderboard="other", confirm="other", purge="yes")
    assert purged.data["state"] == "purged"
    assert not await deps.db.read(deps.db.store.leaderboard_name_taken, "other")
    actions = [a for (a,) in deps.db.store._con.execute("SELECT action FROM audit_log ORDER BY id").fetchall()]
    assert actions == ["leaderboard create", "leaderboard delete", "leaderboard create", "leaderboard delete"]


async def test_a_deleted_name_is_named_as_deleted_brought_back_by_reopen_or_erased_by_purge(env) -> None:
    deps, jobs, _ = env
    await created(deps, jobs)
    await ask(deps, "boss", CommandKind.BOARD_DELETE, leaderboard="weekly", confirm="weekly")
    for kind, args in [(CommandKind.BOARD_UPDATE, {"deadline": "2026-12-01 12:00"}), (CommandKind.BOARD_CLOSE, {})]:
        named = await ask(deps, "boss", kind, leaderboard="weekly", **args)
        assert "weekly was deleted; `admin reopen weekly` brings it back" in named.parts[0].text, named.parts
    back = await ask(deps, "boss", CommandKind.BOARD_REOPEN, leaderboard="weekly")
    assert back.data["state"] == "open"
    assert [b["name"] for b in (await ask(deps, "ada", CommandKind.LIST)).data["leaderboards"]] == ["weekly"]

    await ask(deps, "boss", CommandKind.BOARD_DELETE, leaderboard="weekly", confirm="weekly")
    asked = await ask(deps, "boss", CommandKind.BOARD_DELETE, leaderboard="weekly", purge="yes")
    assert asked.data["state"] == "confirm"
    assert (await ask(deps, "ada", CommandKind.LIST)).data["leaderboards"] == []  # still hidden while asked
    purged = await ask(deps, "boss", CommandKind.BOARD_DELETE, leaderboard="weekly", purge="yes", confirm="weekly")
    assert purged.data["state"] == "purged"
    assert (await created(deps, jobs)).data["state"] == "open"  # the name is free again
