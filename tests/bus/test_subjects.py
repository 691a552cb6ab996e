import pytest

from core.contracts import subjects


@pytest.mark.parametrize("name", ["H100", "A100-80GB", "CPU", "T4"])
def test_plain_pool_names_stay_readable(name: str) -> None:
    assert subjects.token(name) == name
    assert subjects.job_subject(name) == f"jobs.submit.{name}"
    assert subjects.runner_durable(name) == f"runners-{name}"


@pytest.mark.parametrize("name", ["A100 80GB", "a.b", "*", ">", "x/y", "under_score", "RTX·4090", "tab\there"])
def test_tokens_never_split_or_widen_a_subject(name: str) -> None:
    token = subjects.token(name)
    assert token
    assert not set(token) & set(". *>/\\\t")
    assert token.isascii()


def test_different_names_get_different_tokens() -> None:
    names = ["a b", "a_b", "a_20b", "a.b", "a-b", "ab", "A b"]
    assert len({subjects.token(n) for n in names}) == len(names)


def test_an_empty_name_is_refused() -> None:
    with pytest.raises(ValueError):
        subjects.token("")


def test_dead_subject_mirrors_the_job_subject() -> None:
    assert subjects.dead_subject(subjects.job_subject("A100 80GB")) == "jobs.dead." + subjects.token("A100 80GB")
    with pytest.raises(ValueError):
        subjects.dead_subject("runs.result.x")


def test_reply_routes() -> None:
    assert subjects.reply_subject("cli", "ada-1234") == "replies.cli.ada-1234"
    assert subjects.reply_subject("slack", "") == "replies.slack._"
    assert subjects.reply_subject("slack", "C1") != subjects.reply_subject("slack", "")
    assert subjects.platform_replies("discord") == "replies.discord.>"
