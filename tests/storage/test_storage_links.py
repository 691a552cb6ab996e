"""Linking two people into one and unlinking them: rankings, history and tokens follow, and undo is exact."""

from __future__ import annotations

from storage_testkit import T0, Builder

from storage import Store
from storage.records import NewToken


def ranked(store: Store) -> list[tuple[int, str, float]]:
    return [(row.rank, row.display_name, row.score_us) for row in store.ranking("vecadd", "H100")]


def token(person_id: int, n: int) -> NewToken:
    return NewToken(sha256=f"{n:064x}", prefix=f"kr_{n}", person_id=person_id, label="api", created_at=T0)


def test_linked_people_have_one_entry_one_history_and_one_set_of_tokens(store: Store, build: Builder) -> None:
    ada_discord = store.person("discord", "d1", "Ada")
    ada_slack = store.person("slack", "s1", "Ada S")
    bob = build.person("Bob")
    build.submit(ada_discord, 12.0)
    build.submit(ada_slack, 8.0)
    build.submit(bob, 10.0)
    store.tokens.add(token(ada_slack, 1))
    assert ranked(store) == [(1, "Ada S", 8.0), (2, "Bob", 10.0), (3, "Ada", 12.0)]

    store.link_people(ada_discord, ada_slack, T0)
    assert ranked(store) == [(1, "Ada", 8.0), (2, "Bob", 10.0)]  # one entry, the better score
    assert store.find_person("slack", "s1") == ada_discord
    assert len(store.history("vecadd", ada_discord)) == 2 and store.history("vecadd", ada_slack) == []
    assert [t.prefix for t in store.tokens.listed(ada_discord)] == ["kr_1"]
    assert [i[:2] for i in store.identities(ada_discord)] == [("discord", "d1"), ("slack", "s1")]

    # While linked, the Slack account submits again and makes a token: those stay with the kept person.
    build.submit(ada_discord, 7.0)
    store.tokens.add(token(ada_discord, 2))

    assert store.unlink_people(ada_discord, ("slack", "s1"), None, T0) == [(ada_discord, ada_slack)]
    assert ranked(store) == [(1, "Ada", 7.0), (2, "Ada S", 8.0), (3, "Bob", 10.0)]
    assert store.find_person("slack", "s1") == ada_slack
    assert [t.prefix for t in store.tokens.listed(ada_slack)] == ["kr_1"]
    assert [t.prefix for t in store.tokens.listed(ada_discord)] == ["kr_2"]
    assert store.unlink_people(ada_discord, ("discord", "d1"), None, T0) == []  # nothing left to split


def test_unlink_from_the_kept_account_splits_every_link_and_undo_moves_only_what_was_moved(
    store: Store, build: Builder
) -> None:
    kept, second, third = (store.person(p, "u", "Cy") for p in ("discord", "slack", "cli"))
    for person, score in ((kept, 9.0), (second, 5.0), (third, 6.0)):
        build.submit(person, score)
    store.tokens.add(token(third, 3))
    store.link_people(kept, second, T0)
    store.link_people(kept, third, T0)
    assert ranked(store) == [(1, "Cy", 5.0)]
    # A terminal caller is found by the token that the link brought in: only that link is undone.
    assert store.unlink_people(kept, None, f"{3:064x}", T0) == [(kept, third)]
    assert sorted(r[2] for r in ranked(store)) == [5.0, 6.0]
    # From an account the kept person always had, unlinking splits whatever links are left.
    assert store.unlink_people(kept, ("discord", "u"), None, T0) == [(kept, second)]
    assert sorted(r[2] for r in ranked(store)) == [5.0, 6.0, 9.0]
