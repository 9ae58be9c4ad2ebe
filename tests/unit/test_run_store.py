"""The Run tab's line store over a session file: lines, growth and search match a plain read."""

from __future__ import annotations

import random

from etu.runner.session_file import CHUNK, LineFile


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


def test_line_times_come_from_the_index_by_offset(tmp_path):
    """The session writer's index, bisected in place: each line gets the time of the write
    that started it, lines of one write share it, a torn last index line is skipped."""
    from etu.runner.run_store import FileLogStore
    from etu.runner.session import SessionWriter

    writer = SessionWriter(tmp_path, "fvp", {})
    stamps = [100.0 + n for n in range(300)]
    for n, when in enumerate(stamps):  # write n holds n % 3 + 1 lines
        writer.write_output(b"".join(b"w%d l%d\n" % (n, k) for k in range(n % 3 + 1)), when=when)
    writer.finish()
    with open(writer.folder / "raw.index", "ab") as handle:
        handle.write(b"99999")  # torn: a killed run's half-written index line
    store = FileLogStore(writer.folder, started=1.0)
    expected = [stamps[n] for n in range(300) for _ in range(n % 3 + 1)]
    assert store.total == len(expected)
    assert [store.entry(seq)[0] for seq in range(store.total)] == expected
    store.close()


def test_a_session_files_lines_get_the_levels_the_parser_gives_them(tmp_path):
    """A past or long run read back from its file shows and filters the levels it showed
    live: a board's Zephyr log, a timestamped and a coloured one, not only the plain form."""
    from etu.runner.run_model import TEXT
    from etu.runner.run_store import FileLogStore
    from etu.runner.session import SessionWriter

    lines = [
        b"[00:00:06.006,000] <err> executorch: Memory allocation failed",
        b"[00:00:06.007,000] <inf> executorch: Model executed",
        b"0.123 E [executorch:m.cpp:3 f()] behind a timestamp",
        b"\x1b[1;31mE [executorch:m.cpp:4 f()] in colour\x1b[0m",
        b"I [executorch:m.cpp:5 f()] plain",
        b"an application's own line",
    ]
    writer = SessionWriter(tmp_path, "board", {})
    writer.write_output(b"\r\n".join(lines) + b"\r\n", when=1.0)
    writer.finish()
    store = FileLogStore(writer.folder, started=1.0)
    assert [store.entry(n)[5] for n in range(6)] == ["E", "I", "E", "E", "I", None]
    assert [store.level_of(n) for n in range(6)] == ["E", "I", "E", "E", "I", "other"]
    assert list(store.filtered("", frozenset({"E"}))) == [0, 2, 3]
    assert list(store.filtered("executorch", frozenset({"I"}))) == [1, 4]
    assert store.entry(3)[TEXT].startswith("E [executorch:m.cpp:4")
    store.close()


def test_level_filter_over_the_file_agrees_with_each_line_level(tmp_path, monkeypatch):
    """The block scan (a regex over bytes, blocks cut at newlines, lines longer than a
    block) picks exactly the lines whose own level (the parser's) is chosen, for every
    choice of levels: also behind a foreign prefix, a platform's tag or a colour code."""
    import itertools

    from etu.parsers.runner_log import line_level
    from etu.runner import session_file

    monkeypatch.setattr(session_file, "_LEVEL_BLOCK", 4096)
    rng = random.Random(3)
    kinds = [
        b"I [executorch:m.cpp:1 f()] fine",
        b"D 0:00:01.250 [executorch:m.cpp:2 f()] detail",
        b"E [executorch:m.cpp:3 f()] bad",
        b"F executorch:m.cpp:4 fatal",
        b"E: driver error",
        b"W: driver warning",
        b"? [executorch:x] unknown level",
        b"plain text from the application",
        b"I" + b"x" * 9000,  # longer than a block, no level
        b"E [executorch:long.cpp:9] " + b"y" * 9000,  # longer than a block, level E
        b"[00:00:01.000,000] <err> executorch: zephyr error",
        b"<inf> app: zephyr without a time",
        b"[T00001] E [executorch:m.cpp:5 f()] behind a trace tag",
        b"0.123 F [executorch:m.cpp:6 f()] behind a timestamp",
        b"\x1b[31mE [executorch:m.cpp:7 f()] in colour\x1b[0m",
        b"[D] a custom PAL's level",
        b"[TRACE] tick",
        b"I [executorch:" + b"z" * 200 + b"] a prefix too long to be one",
        b"Output[0][0]: 1",
        b"E [executorch:m.cpp:8 f()] a CRLF line\r",
        b"<err> " + b"y" * 9000,  # longer than a block, level E from its tag
    ]
    rows = [rng.choice(kinds) + b"\n" for _ in range(3000)]
    path = tmp_path / "raw.log"
    path.write_bytes(b"".join(rows) + b"E: unfinished last line")
    store = LineFile(path)

    def level(row: bytes) -> str:
        found = line_level(row.decode())
        return found if found in ("D", "I", "E", "F") else "other"

    for size in range(6):
        for chosen in itertools.combinations(("D", "I", "E", "F", "other"), size):
            expected = [n for n, row in enumerate(rows) if level(row) in chosen]
            assert list(store.level_lines(chosen, 0)) == expected, chosen
            assert list(store.level_lines(chosen, 1500)) == [n for n in expected if n >= 1500]
    store.close()


def test_a_search_in_a_child_process_finds_what_one_in_place_finds(tmp_path):
    """The child (a big file's search) and the in-place scan agree, hit for hit: one offset
    per line holding the text, case folded, a hit across a block edge found once."""
    from etu.runner import session_file
    from etu.runner.session_file import find_offsets, offsets_in_child

    rng = random.Random(5)
    rows = [
        rng.choice([b"plain row %d\n", b"a NeEdLe row %d needle\n", b"row %d ends in nee"]) % n
        for n in range(20_000)
    ]
    rows[100] = b"x" * (1 << 17) + b"needle in a long line\n"
    path = tmp_path / "raw.log"
    path.write_bytes(b"".join(rows))
    size = path.stat().st_size
    expected, at = [], 0
    for row in rows:
        if b"needle" in row.lower():
            expected.append(at + row.lower().index(b"needle"))
        at += len(row)
    assert list(find_offsets(path, "needle", 0, size)) == expected
    assert list(offsets_in_child(path, "NEEDLE", 0, size)) == expected
    original = session_file._BLOCK
    try:
        session_file._BLOCK = 1 << 16  # hits across many block edges
        assert list(find_offsets(path, "needle", 0, size)) == expected
    finally:
        session_file._BLOCK = original
