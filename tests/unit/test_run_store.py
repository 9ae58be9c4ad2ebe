"""The Run tab's line store over a session file: lines, growth and search match a plain read."""

from __future__ import annotations

import random

from etu_tui.widgets.run_store import CHUNK, LineFile


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def test_lines_match_a_plain_read_as_the_file_grows(tmp_path):
    path = tmp_path / "raw.log"
    path.write_bytes(b"")
    rng = random.Random(8)
    data = b""
    store = LineFile(path)
    for _ in range(40):
        piece = b"".join(
            b"I [executorch:f.cpp:%d] %s\n" % (rng.randrange(999), b"x" * rng.randrange(300))
            for _ in range(rng.randrange(1, 400))
        )
        piece = piece[: rng.randrange(1, len(piece) + 1)]  # may end mid-line
        data += piece
        with open(path, "ab") as handle:
            handle.write(piece)
        assert store.grow()
        expected = _lines(data)
        assert store.lines == len(expected)
        for n in {0, len(expected) - 1, len(expected) // 2, rng.randrange(len(expected))}:
            assert store.get(n) == expected[n]
    assert store.size == len(data) > 4 * CHUNK
    store.close()


def test_search_reports_every_matching_line_of_300k(tmp_path):
    path = tmp_path / "raw.log"
    rows = [b"I [executorch:method.cpp:%d] step %d\n" % (n % 97, n) for n in range(300_000)]
    rows[17] = b"E: Rare-Marker first\n"
    rows[299_990] = b"E: rare-marker last rare-MARKER\n"
    path.write_bytes(b"".join(rows))
    store = LineFile(path)
    assert store.lines == 300_000
    assert store.get(0) == rows[0]
    assert list(store.find_all("RARE-marker")) == [17, 299_990]
    assert len(store.find_all("no such text")) == 0
    assert store.line_at(store.span(299_990)[0]) == 299_990
    store.close()
