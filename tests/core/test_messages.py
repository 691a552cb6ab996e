import pytest

from core.contracts.messages import (
    Actor,
    Attachment,
    Command,
    CommandKind,
    DecodeError,
    Platform,
    Reply,
    ReplyTo,
    decode,
    encode,
)
from core.contracts.reply_parts import error_reply


def test_command_with_file_round_trips():
    cmd = Command(
        actor=Actor(Platform.SLACK, "U1", "Ada", ["admin"]),
        reply_to=ReplyTo(Platform.SLACK, "C1", "1700000000.000100"),
        kind=CommandKind.SUBMIT,
        args={"leaderboard": "vectoradd", "gpus": ["H100"]},
        attachment=Attachment("k.py", b"\x00\xffbinary-safe"),
    )
    assert decode(Command, encode(cmd)) == cmd


def test_reply_round_trips():
    reply = error_reply(ReplyTo(Platform.CLI, "s1"), "No such leaderboard.", "c1")
    assert decode(Reply, encode(reply)) == reply


@pytest.mark.parametrize("payload", [b"not json", b"[1]", b'{"v": 99}', b'{"v": 1, "actor": 3}'])
def test_bad_payloads_raise_decode_error(payload):
    with pytest.raises(DecodeError):
        decode(Command, payload)
