"""The schema as an ordered list of migrations, and the function that brings a file up to date.

Migration N (1-based position in ``MIGRATIONS``) is applied once, in its own transaction together with its
row in ``schema_migrations``. Never edit a released migration: append a new one. There are no foreign keys:
every write goes through ``storage/_writes.py``, which inserts a parent row before its children in the same
transaction, so the index lookup a foreign key adds to each insert would buy nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import duckdb

from storage._sql import one_row
from storage.errors import SchemaTooNew

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Migration:
    name: str
    statements: tuple[str, ...]


_INITIAL = Migration(
    "initial schema",
    (
        """CREATE SEQUENCE person_id_seq START 1""",
        """CREATE TABLE people (
        id BIGINT PRIMARY KEY DEFAULT nextval('person_id_seq'),
        display_name VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now())""",
        """CREATE TABLE identities (
        platform VARCHAR NOT NULL,
        user_id VARCHAR NOT NULL,
        person_id BIGINT NOT NULL,
        display_name VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (platform, user_id))""",
        """CREATE TABLE leaderboards (
        name VARCHAR PRIMARY KEY,
        description VARCHAR NOT NULL,
        problem JSON NOT NULL,
        problem_sha VARCHAR NOT NULL,
        gpus VARCHAR[] NOT NULL,
        ranking_by VARCHAR NOT NULL,
        deadline TIMESTAMPTZ,
        secret_seed BIGINT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL)""",
        """CREATE TABLE code_blobs (
        sha256 VARCHAR PRIMARY KEY,
        source VARCHAR NOT NULL,
        bytes INTEGER NOT NULL)""",
        """CREATE SEQUENCE submission_id_seq START 1""",
        """CREATE TABLE submissions (
        id BIGINT PRIMARY KEY DEFAULT nextval('submission_id_seq'),
        command_id VARCHAR NOT NULL UNIQUE,
        person_id BIGINT NOT NULL,
        leaderboard VARCHAR NOT NULL,
        file_name VARCHAR NOT NULL,
        code_sha VARCHAR NOT NULL,
        mode VARCHAR NOT NULL,
        reply_to JSON NOT NULL,
        created_at TIMESTAMPTZ NOT NULL)""",
        """CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY,
        submission_id BIGINT NOT NULL,
        gpu VARCHAR NOT NULL,
        state VARCHAR NOT NULL CHECK (state IN ('queued', 'running', 'done')),
        status VARCHAR CHECK (status IN ('passed', 'failed', 'error', 'timeout')),
        score_us DOUBLE,
        result JSON,
        worker VARCHAR,
        attempts INTEGER NOT NULL DEFAULT 0,
        gpu_s DOUBLE,
        created_at TIMESTAMPTZ NOT NULL,
        finished_at TIMESTAMPTZ)""",
        """CREATE TABLE shape_results (
        run_id VARCHAR NOT NULL,
        shape_index INTEGER NOT NULL,
        spec JSON NOT NULL,
        n INTEGER NOT NULL,
        median_us DOUBLE,
        mean_us DOUBLE,
        ci_low_us DOUBLE,
        ci_high_us DOUBLE,
        min_us DOUBLE,
        p90_us DOUBLE,
        achieved_gbps DOUBLE,
        peak_fraction DOUBLE,
        PRIMARY KEY (run_id, shape_index))""",
        # Each person's entry per (leaderboard, gpu): derived from runs, kept current by storage/_ranking.py.
        """CREATE TABLE personal_bests (
        leaderboard VARCHAR NOT NULL,
        gpu VARCHAR NOT NULL,
        person_id BIGINT NOT NULL,
        score_us DOUBLE NOT NULL,
        submitted_at TIMESTAMPTZ NOT NULL,
        submission_id BIGINT NOT NULL,
        run_id VARCHAR NOT NULL,
        PRIMARY KEY (leaderboard, gpu, person_id))""",
        """CREATE SEQUENCE audit_id_seq START 1""",
        # "at" is a reserved word in DuckDB 2.0, hence created_at like every other table.
        """CREATE TABLE audit_log (
        id BIGINT PRIMARY KEY DEFAULT nextval('audit_id_seq'),
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        actor VARCHAR NOT NULL,
        action VARCHAR NOT NULL,
        detail JSON NOT NULL)""",
    ),
)

# The estimated price of each run's GPU time (Modal bills per second; local and GitHub runs stay NULL).
_RUN_COSTS = Migration("run costs", ("ALTER TABLE runs ADD COLUMN cost_usd DOUBLE",))

# Personal API tokens, stored as the SHA-256 of the token (tokens are 32 random bytes: no salt or slow hash
# needed), with a prefix people recognise them by; and whether a leaderboard's submissions (code and detailed
# results) become visible to everyone once it has closed.
_TOKENS = Migration(
    "personal tokens and visibility after close",
    (
        """CREATE TABLE api_tokens (
        sha256 VARCHAR PRIMARY KEY,
        prefix VARCHAR NOT NULL,
        person_id BIGINT NOT NULL,
        label VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        last_used_at TIMESTAMPTZ,
        revoked_at TIMESTAMPTZ)""",
        "ALTER TABLE leaderboards ADD COLUMN public_after_close BOOLEAN DEFAULT false",
    ),
)

# When a run's final reply went out: a result that arrives again (redelivered, or a re-run) is not answered twice.
_REPLIED = Migration("replied runs", ("ALTER TABLE runs ADD COLUMN replied_at TIMESTAMPTZ",))

# Leaderboards managed live from chat (issue 18): each version of a problem is kept, so a run says which version it
# was judged by (the version in force when its submission arrived); an opening time; who created it (a creator
# manages what they made); and deletion that hides a leaderboard and keeps its history.
_LIVE_BOARDS = Migration(
    "leaderboards managed live",
    (
        "ALTER TABLE leaderboards ADD COLUMN version INTEGER DEFAULT 1",
        "ALTER TABLE leaderboards ADD COLUMN opens_at TIMESTAMPTZ",
        "ALTER TABLE leaderboards ADD COLUMN created_by BIGINT",
        "ALTER TABLE leaderboards ADD COLUMN hidden_at TIMESTAMPTZ",
        """CREATE TABLE leaderboard_versions (
        leaderboard VARCHAR NOT NULL,
        version INTEGER NOT NULL,
        problem JSON NOT NULL,
        problem_sha VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        created_by BIGINT,
        PRIMARY KEY (leaderboard, version))""",
    ),
)

# Challenges: leaderboards grouped between an opening and a close, run by the core's scheduler. Each scheduled
# action is recorded when it starts and when it is done, so it happens once whatever restarts in between; results
# hold the frozen standings and the podium's verification. Teams for team standings.
_CHALLENGES = Migration(
    "challenges",
    (
        """CREATE SEQUENCE challenge_id_seq START 1""",
        """CREATE TABLE challenges (
        id BIGINT PRIMARY KEY DEFAULT nextval('challenge_id_seq'),
        title VARCHAR NOT NULL,
        leaderboards VARCHAR[] NOT NULL,
        opens_at TIMESTAMPTZ NOT NULL,
        closes_at TIMESTAMPTZ NOT NULL,
        announce VARCHAR[] NOT NULL,
        created_by BIGINT,
        created_at TIMESTAMPTZ NOT NULL,
        cancelled_at TIMESTAMPTZ,
        results JSON)""",
        """CREATE TABLE challenge_actions (
        challenge_id BIGINT NOT NULL,
        action VARCHAR NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        done_at TIMESTAMPTZ,
        PRIMARY KEY (challenge_id, action))""",
        """CREATE TABLE teams (
        team VARCHAR NOT NULL,
        person_id BIGINT NOT NULL,
        PRIMARY KEY (team, person_id))""",
    ),
)

# Administration from chat: roles granted to people, bans, a submission taken out of every ranking (kept, with the
# reason), and a person's own rate limit.
_ADMIN = Migration(
    "roles, bans, invalidations and limits",
    (
        "ALTER TABLE submissions ADD COLUMN invalid_reason VARCHAR",
        """CREATE TABLE roles (
        person_id BIGINT NOT NULL,
        role VARCHAR NOT NULL,
        granted_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (person_id, role))""",
        """CREATE TABLE bans (
        person_id BIGINT PRIMARY KEY,
        reason VARCHAR NOT NULL,
        banned_at TIMESTAMPTZ NOT NULL)""",
        """CREATE TABLE rate_limits (
        person_id BIGINT PRIMARY KEY,
        per_minute INTEGER NOT NULL)""",
    ),
)


# One person across platforms: linking folds one person (identities, submissions, tokens) into another; each
# link keeps what it moved, so that unlinking moves exactly that back. The folded person's row stays, empty.
_LINKS = Migration(
    "person links",
    (
        """CREATE SEQUENCE person_link_id_seq START 1""",
        """CREATE TABLE person_links (
        id BIGINT PRIMARY KEY DEFAULT nextval('person_link_id_seq'),
        kept_person_id BIGINT NOT NULL,
        joined_person_id BIGINT NOT NULL,
        identities JSON NOT NULL,
        submissions JSON NOT NULL,
        tokens JSON NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        undone_at TIMESTAMPTZ)""",
    ),
)


# A leaderboard's deadline is closed like a challenge: its own one-leaderboard challenge, marked with its name (the
# title may change: a reopened leaderboard's past round keeps its results under a dated title).
_DEADLINES = Migration("leaderboards' own challenges", ("ALTER TABLE challenges ADD COLUMN deadline_of VARCHAR",))

# A leaderboard's own rate limit (``admin limit LEADERBOARD N/min``): everyone's runs on it together, per GPU.
_BOARD_LIMITS = Migration(
    "leaderboards' rate limits",
    (
        """CREATE TABLE leaderboard_rate_limits (
        leaderboard VARCHAR PRIMARY KEY,
        per_minute INTEGER NOT NULL)""",
    ),
)

# Reports and reviews (issue 20): anyone may flag a submission for the admins (one open report per person and
# submission); an admin's decision (cheat or fine) closes its reports and is kept per submission, which also clears a
# podium entry that a challenge's verification held (a held entry is open while no decision came after its close).
_REVIEWS = Migration(
    "reports and review decisions",
    (
        """CREATE SEQUENCE report_id_seq START 1""",
        """CREATE TABLE reports (
        id BIGINT PRIMARY KEY DEFAULT nextval('report_id_seq'),
        submission_id BIGINT NOT NULL,
        reporter_id BIGINT NOT NULL,
        reason VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        resolution VARCHAR CHECK (resolution IN ('cheat', 'fine')),
        resolved_at TIMESTAMPTZ)""",
        """CREATE TABLE review_decisions (
        submission_id BIGINT NOT NULL,
        decision VARCHAR NOT NULL CHECK (decision IN ('cheat', 'fine')),
        note VARCHAR NOT NULL,
        decided_by VARCHAR NOT NULL,
        decided_at TIMESTAMPTZ NOT NULL)""",
    ),
)

# The problem's reference timed by the judge on each GPU, per version of the problem (issue 28): rankings say how a
# kernel compares with it.
_REFERENCE_TIMES = Migration(
    "the problem's reference timed on each GPU",
    (
        """CREATE TABLE reference_times (
        leaderboard VARCHAR NOT NULL,
        version INTEGER NOT NULL,
        gpu VARCHAR NOT NULL,
        score_us DOUBLE NOT NULL,
        run_id VARCHAR NOT NULL,
        timed_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (leaderboard, version, gpu))""",
    ),
)

# A leaderboard's rounds (issue 27): each row starts a round, recorded when the leaderboard opens again after a crowned
# close; a ranking of a round counts only its submissions. A file from before is given the rounds its crowned closes
# started: one at each close of a leaderboard that has been reopened since (nothing ranked came in between).
_ROUNDS = Migration(
    "leaderboards' rounds",
    (
        """CREATE TABLE rounds (
        leaderboard VARCHAR NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (leaderboard, started_at))""",
        """INSERT INTO rounds (leaderboard, started_at)
        SELECT DISTINCT lb.name, c.closes_at
        FROM challenges c
        JOIN challenge_actions a ON a.challenge_id = c.id AND a.action = 'close' AND a.done_at IS NOT NULL
        JOIN leaderboards lb ON list_contains(c.leaderboards, lb.name)
        WHERE c.cancelled_at IS NULL AND (lb.deadline IS NULL OR lb.deadline > c.closes_at)""",
    ),
)

MIGRATIONS: tuple[Migration, ...] = (
    _INITIAL,
    _RUN_COSTS,
    _TOKENS,
    _REPLIED,
    _LIVE_BOARDS,
    _CHALLENGES,
    _ADMIN,
    _LINKS,
    _DEADLINES,
    _BOARD_LIMITS,
    _REVIEWS,
    _REFERENCE_TIMES,
    _ROUNDS,
)


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The highest applied migration, 0 for a file that has none."""
    con.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())""")
    (version,) = one_row(con.execute("SELECT coalesce(max(version), 0) FROM schema_migrations"))
    return version


def migrate(con: duckdb.DuckDBPyConnection, migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Apply the migrations the file lacks; refuse a file newer than ``migrations``. Returns the version."""
    current = schema_version(con)
    known = len(migrations)
    if current > known:
        raise SchemaTooNew(
            f"the database was written by a newer kernelrank (schema version {current}, this build knows up to "
            f"{known}); upgrade kernelrank or point it at another database file"
        )
    for version, migration in enumerate(migrations[current:], start=current + 1):
        con.begin()
        try:
            for statement in migration.statements:
                con.execute(statement)
            con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, migration.name])
        except BaseException:
            con.rollback()
            raise
        con.commit()
        log.info("database schema migrated to version %d (%s)", version, migration.name)
    return max(current, known)
