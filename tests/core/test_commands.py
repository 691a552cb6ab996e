import pytest

from core.contracts.commands import decode_source, normalise_mode, parse_headers
from core.contracts.errors import UserError


def test_popcorn_headers_are_read():
    source = "#!POPCORN leaderboard vectoradd\n#!POPCORN gpu H100 A100-80GB\nimport torch\n"
    headers = parse_headers(source)
    assert headers.leaderboard == "vectoradd"
    assert headers.gpus == ["H100", "A100-80GB"]
    assert headers.mode == ""


def test_kernelrank_headers_and_case():
    headers = parse_headers("# a kernel\n#!kernelrank gpus cpu,H100\n#!kernelrank MODE Test\n")
    assert headers.gpus == ["cpu", "H100"]
    assert headers.mode == "test"


def test_headers_below_the_top_are_ignored():
    source = "\n" * 40 + "#!POPCORN leaderboard late\n"
    assert parse_headers(source).leaderboard == ""


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("kernel.txt", b"x", "not a kernel file"),
        ("kernel.py", b"x" * 2048, "limit is 1 KiB"),
        ("kernel.py", b"  \n", "empty"),
        ("kernel.py", b"def custom_kernel(d):\n    return '\xff'\n", "not UTF-8"),
    ],
)
def test_bad_files_get_one_clear_sentence(name, content, words):
    with pytest.raises(UserError, match=words):
        decode_source(name, content, max_bytes=1024)


def test_good_file_is_decoded():
    assert decode_source("k.cu", "// ü\n".encode(), 1024) == "// ü\n"


def test_modes():
    assert normalise_mode("") == "ranked"
    assert normalise_mode("TEST") == "test"
    assert normalise_mode("Leaderboard") == "ranked"  # popcorn-cli's name for it
    with pytest.raises(UserError, match="Unknown mode"):
        normalise_mode("fast")
