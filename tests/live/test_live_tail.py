"""Reading a growing recording's finished ticks: a frame being written is waited for, a closed segment is left
for the next one, a segment folded before it was read is read from its part, and start-up after a fold finds
the ticks the fold took out of the journal."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from live.tail import JournalTail
from recordings import format as fmt
from recordings.journal import encode_frame


def _payload(tick: int | None, time: int = 1_700_000_000_000_000) -> dict[str, Any]:
    return {"tick": tick, "time": time + (tick or 0) * 10_000_000, "tables": {}}


def _segment(root: Path, seq: int) -> Path:
    return root / fmt.JOURNAL_DIR / fmt.segment_name(seq)


def _recording(tmp_path: Path) -> Path:
    root = tmp_path / "rec"
    (root / fmt.JOURNAL_DIR).mkdir(parents=True)
    (root / fmt.PARTS_DIR).mkdir()
    return root


def test_a_frame_being_written_is_read_once_it_is_whole(tmp_path: Path) -> None:
    root = _recording(tmp_path)
    seg = _segment(root, 1)
    first, second = encode_frame(_payload(0)), encode_frame(_payload(1))
    seg.write_bytes(first + second[:7])  # the writer is in the middle of tick 1
    tail = JournalTail(root, after_tick=None, after_observed=None)
    assert [f.tick for f in tail.read()] == [0]
    assert tail.torn == 7
    assert tail.read() == []  # still torn: nothing new, nothing twice
    with seg.open("ab") as fh:
        fh.write(second[7:])
    assert [f.tick for f in tail.read()] == [1]
    assert tail.torn == 0


def test_the_next_segment_is_read_once_the_writer_opens_it(tmp_path: Path) -> None:
    root = _recording(tmp_path)
    _segment(root, 1).write_bytes(encode_frame(_payload(0)))
    tail = JournalTail(root, after_tick=None, after_observed=None)
    assert [f.tick for f in tail.read()] == [0]
    with _segment(root, 1).open("ab") as fh:
        fh.write(encode_frame(_payload(1)))
    _segment(root, 2).write_bytes(encode_frame(_payload(2)))
    assert [f.tick for f in tail.read()] == [1, 2]
    assert tail.position.segment == 2


def test_ticks_already_read_at_start_up_are_skipped(tmp_path: Path) -> None:
    root = _recording(tmp_path)
    _segment(root, 1).write_bytes(b"".join(encode_frame(_payload(t)) for t in range(4)))
    tail = JournalTail(root, after_tick=2, after_observed=None)
    assert [f.tick for f in tail.read()] == [3]


def test_a_segment_gone_with_no_part_left_is_said_and_skipped(tmp_path: Path) -> None:
    """Retention dropped a segment the reader had not finished: it goes on at the oldest segment there is."""
    root = _recording(tmp_path)
    _segment(root, 1).write_bytes(encode_frame(_payload(0)))
    tail = JournalTail(root, after_tick=None, after_observed=None)
    assert [f.tick for f in tail.read()] == [0]
    os.unlink(_segment(root, 1))
    _segment(root, 3).write_bytes(encode_frame(_payload(5)))
    assert [f.tick for f in tail.read()] == [5]
    assert any("went before it was read" in n for n in tail.notes)


def test_a_torn_tail_left_behind_by_a_writer_that_went_on_in_a_new_segment_is_said_and_passed(tmp_path: Path) -> None:
    root = _recording(tmp_path)
    _segment(root, 1).write_bytes(encode_frame(_payload(0)) + encode_frame(_payload(1))[:9])
    tail = JournalTail(root, after_tick=None, after_observed=None)
    assert [f.tick for f in tail.read()] == [0]
    _segment(root, 2).write_bytes(encode_frame(_payload(1)))
    assert [f.tick for f in tail.read()] == [1]
    assert any("torn journal tail ignored: j000001.log ends in 9 bytes" in n for n in tail.notes)
