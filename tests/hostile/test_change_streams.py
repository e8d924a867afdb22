"""Change files that attack the readers (issue 12, part 6, item 5): GBase 8s records and
Qlik Kafka Avro messages whose declared size is near 2^31 or 2^32 - 1, with the input
ending right after or followed by 200 MB of garbage from a pipe; truncated and garbage
streams of gbase8s, qlik-kafka (JSON lines and Avro) and qlik-ct CSV files; an Avro
array of null claiming 2^40 items, and a TABSCHEMA column list with 50 KB of blanks.

Each must stop the export with exit code 2 and a message naming the place (the byte
offset; the message and byte; the line; the file), write nothing to --out, finish in
seconds, and never buffer what a size field claims: the peak memory of the export's
process tree stays within MEMORY_BOUND_MIB of the same reader refusing the same record
with nothing after it."""

from __future__ import annotations

import random
import re
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.conftest import MASTER, Run, run_xdspub
from tests.test_gbase8s import COMMIT_AT, INSERT_AT, SEED_004, tabschema
from tests.test_qlik_ct import SEED_ROWS, landed
from tests.test_qlik_kafka import (
    EMP_COLUMNS,
    EMP_ROW,
    avro_frames,
    envelope,
    jsonl,
    message,
    metadata,
    zigzag,
)

pytestmark = pytest.mark.slow

GARBAGE_BYTES = 200 * 1024 * 1024
MEMORY_BOUND_MIB = 64  # far below the 200 MB of garbage, let alone 2 GB
SECONDS = 60  # "in seconds": Python's start here takes a few, on a busy machine more
GBASE8S = ("--source", "gbase8s", "--tables", "111=t1", "--keys", "t1=c1")
KAFKA = ("--source", "qlik-kafka")
INSERT = 40  # a GBase 8s row record's number; its header needs 16 + 20 bytes


def garbage(total: int = GARBAGE_BYTES, seed: int = 7) -> Iterator[bytes]:
    block = random.Random(seed).randbytes(1 << 20)
    for _ in range(total // len(block)):
        yield block


def export_stream(
    tmp_path: Path,
    source: tuple[str, ...],
    data: bytes | None = None,
    feed: Iterator[bytes] | None = None,
    input_path: Path | None = None,
) -> tuple[Run, Path]:
    """``xdspub export`` of a change stream: from a file (``data``, or ``input_path``), or
    from a pipe (``data`` then ``feed``). --out is an empty folder."""
    out = tmp_path / "out"
    out.mkdir(parents=True, exist_ok=True)
    options = {}
    if feed is not None:
        source_input, options["feed"] = "-", iter([*([data] if data else []), *feed])
    else:
        if input_path is None:
            input_path = tmp_path / "input.bin"
            input_path.write_bytes(data)
        source_input = str(input_path)
    run = run_xdspub(
        "export", *source, "--input", source_input, "--out", str(out), "--master", MASTER,
        timeout=600, **options,
    )
    return run, out


def assert_refused(run: Run, out: Path, *places: str) -> None:
    """Exit 2, a message naming each of ``places`` (regular expressions), nothing in --out,
    in seconds."""
    assert run.code == 2, run.describe()
    assert "Traceback" not in run.stderr, run.describe()
    for place in places:
        assert re.search(place, run.stderr), f"{place!r} not named:\n{run.describe()}"
    assert sorted(p.name for p in out.iterdir()) == [], "something was written to --out"
    assert run.seconds < SECONDS, run.describe()


def assert_bounded(run: Run, baseline: Run) -> None:
    grown = (run.peak_kib - baseline.peak_kib) / 1024
    assert grown < MEMORY_BOUND_MIB, (
        f"peak {run.peak_kib / 1024:.0f} MiB with 200 MB after the record, "
        f"{baseline.peak_kib / 1024:.0f} MiB with nothing after it ({run.peak_breakdown()})"
    )


# --- sizes near 2^31 ------------------------------------------------------------------

GBASE8S_SIZES = {
    "header 2^31-1": (0x7FFF_FFFF, 0),
    "header 2^31": (0x8000_0000, 0),
    "header 2^32-1": (0xFFFF_FFFF, 0),
    "payload 2^31-1": (36, 0x7FFF_FFFF),
    "payload 2^31": (36, 0x8000_0000),
    "payload 2^32-1": (36, 0xFFFF_FFFF),
}


def gbase8s_record(header_size: int, payload_size: int) -> bytes:
    """Seed 004 (a whole transaction), then a row record claiming these sizes."""
    return SEED_004 + struct.pack(">IIII", header_size, payload_size, 66, INSERT)


@pytest.mark.parametrize("sizes", GBASE8S_SIZES, ids=list(GBASE8S_SIZES))
def test_gbase8s_size_near_2_31_then_the_end(tmp_path: Path, sizes: str) -> None:
    run, out = export_stream(tmp_path, GBASE8S, gbase8s_record(*GBASE8S_SIZES[sizes]))
    assert_refused(run, out, rf"\bbyte {len(SEED_004)}\b")


@pytest.mark.parametrize("sizes", ["header 2^31-1", "payload 2^32-1"])
def test_gbase8s_size_near_2_31_then_200_mb_of_garbage_from_a_pipe(
    tmp_path: Path, sizes: str
) -> None:
    record = gbase8s_record(*GBASE8S_SIZES[sizes])
    baseline, _ = export_stream(tmp_path / "baseline", GBASE8S, record, feed=iter([]))
    run, out = export_stream(tmp_path, GBASE8S, record, feed=garbage())
    assert_refused(run, out, rf"\bbyte {len(SEED_004)}\b")
    assert_bounded(run, baseline)


def kafka_avro() -> list[bytes]:
    return avro_frames(metadata("EMPLOYEES", EMP_COLUMNS), message("EMPLOYEES", "INSERT", EMP_ROW))


KAFKA_LENGTHS = {
    "2^31-16": 0x7FFF_FFF0,
    "2^31-1": 0x7FFF_FFFF,
    "2^31": 0x8000_0000,
    "2^32-1": 0xFFFF_FFFF,
}


@pytest.mark.parametrize("length", KAFKA_LENGTHS, ids=list(KAFKA_LENGTHS))
def test_kafka_avro_length_near_2_31_then_the_end(tmp_path: Path, length: str) -> None:
    first = kafka_avro()[0]
    run, out = export_stream(tmp_path, KAFKA, first + struct.pack(">I", KAFKA_LENGTHS[length]))
    assert_refused(run, out, r"\bmessage 2\b", rf"\bbyte {len(first)}\b")


def test_kafka_avro_length_near_2_31_then_200_mb_of_garbage_from_a_pipe(tmp_path: Path) -> None:
    first = kafka_avro()[0]
    data = first + struct.pack(">I", 0x7FFF_FFF0)
    baseline, _ = export_stream(tmp_path / "baseline", KAFKA, data, feed=iter([]))
    run, out = export_stream(tmp_path, KAFKA, data, feed=garbage())
    assert_refused(run, out, r"\bmessage 2\b", rf"\bbyte {len(first)}\b")
    assert_bounded(run, baseline)


# --- truncated and garbage streams ------------------------------------------------------


@pytest.mark.parametrize(
    ("cut", "offset"),
    [
        (170, INSERT_AT),
        (INSERT_AT + 10, INSERT_AT),
        (COMMIT_AT + 20, COMMIT_AT),
        (len(SEED_004) - 3, COMMIT_AT),
    ],
    ids=["inside-insert-payload", "inside-insert-header", "inside-commit", "last-bytes"],
)
def test_gbase8s_truncated(tmp_path: Path, cut: int, offset: int) -> None:
    run, out = export_stream(tmp_path, GBASE8S, SEED_004[:cut])
    assert_refused(run, out, rf"\bbyte {offset}\b")


@pytest.mark.parametrize("seed", [1, 2])
def test_gbase8s_garbage(tmp_path: Path, seed: int) -> None:
    run, out = export_stream(tmp_path, GBASE8S, random.Random(seed).randbytes(1 << 20))
    assert_refused(run, out, r"\bbyte \d+")


def test_gbase8s_garbage_after_a_good_transaction(tmp_path: Path) -> None:
    run, out = export_stream(tmp_path, GBASE8S, SEED_004 + random.Random(3).randbytes(4096))
    assert_refused(run, out, rf"\bbyte {len(SEED_004)}\b")


def test_kafka_avro_truncated(tmp_path: Path) -> None:
    first, second = kafka_avro()
    run, out = export_stream(tmp_path, KAFKA, first + second[: len(second) // 2])
    assert_refused(run, out, r"\bmessage 2\b", rf"\bbyte {len(first)}\b")


def test_kafka_avro_truncated_inside_the_length(tmp_path: Path) -> None:
    first, second = kafka_avro()
    run, out = export_stream(tmp_path, KAFKA, first + second[:2])
    assert_refused(run, out, r"\bmessage 2\b", rf"\bbyte {len(first)}\b")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kafka_avro_garbage(tmp_path: Path, seed: int) -> None:
    data = random.Random(seed).randbytes(1 << 20)
    # Not a brace nor a blank, so read as Avro: a length of up to 2^31 (or a negative one).
    data = bytes([(0x01, 0x2A, 0x90)[seed - 1]]) + data[1:]
    run, out = export_stream(tmp_path, KAFKA, data)
    assert_refused(run, out, r"\bbyte \d+")


def test_kafka_avro_garbage_after_a_good_message(tmp_path: Path) -> None:
    first, second = kafka_avro()
    # a plausible length, then bytes that are no Replicate envelope
    junk = random.Random(4).randbytes(500)
    run, out = export_stream(tmp_path, KAFKA, first + second + struct.pack(">I", len(junk)) + junk)
    assert_refused(run, out, r"\bmessage 3\b", rf"\bbyte {len(first) + len(second)}\b")


def test_kafka_avro_array_of_nulls_claiming_2_40_items(tmp_path: Path) -> None:
    """A message whose schema is an array of null and whose block count says 2^40: each
    item takes no byte, so nothing but a bound stops the decoding (fastavro alone
    allocated until the process died)."""
    first, nulls = kafka_avro()[0], zigzag(2**40) + b"\x00"
    second = envelope("DT", nulls, schema={"type": "array", "items": "null"})
    baseline, _ = export_stream(tmp_path / "baseline", KAFKA, first)
    run, out = export_stream(tmp_path, KAFKA, first + second)
    at = len(first) + len(second) - len(nulls)  # the message's bytes end the envelope
    assert_refused(run, out, r"\bmessage 2\b", rf"\bbyte {at}\b", "1099511627776 items")
    assert_bounded(run, baseline)


def test_gbase8s_tabschema_with_50_kb_of_blanks(tmp_path: Path) -> None:
    """A column list with a long run of blanks: read in time linear in its length."""
    data = tabschema(0x6F, "c1 integer" + " " * 50_000 + "!", 4, 1, 0)
    run, out = export_stream(tmp_path, GBASE8S, data)
    assert_refused(run, out, r"cannot parse TABSCHEMA column", r"\bbyte 0\b")


def kafka_json() -> str:
    return jsonl(metadata("EMPLOYEES", EMP_COLUMNS), message("EMPLOYEES", "INSERT", EMP_ROW))


def test_kafka_json_truncated(tmp_path: Path) -> None:
    text = kafka_json().encode()
    run, out = export_stream(tmp_path, KAFKA, text[: len(text) - 40])
    assert_refused(run, out, r"\bline 2\b")


def test_kafka_json_garbage(tmp_path: Path) -> None:
    """A first brace, then bytes that are not UTF-8 (nor JSON)."""
    run, out = export_stream(tmp_path, KAFKA, b'{"' + random.Random(5).randbytes(1 << 16))
    assert_refused(run, out, r"\bline 1\b|\bbyte \d+")


def test_kafka_json_garbage_after_good_lines(tmp_path: Path) -> None:
    data = kafka_json().encode() + b"\xff\xfe\x00garbage\x80\n"
    run, out = export_stream(tmp_path, KAFKA, data)
    assert_refused(run, out, r"\bline 3\b|\bbyte \d+")


def qlik_ct_file(tmp_path: Path) -> Path:
    """Seed 000's change-table file and its .dfm, in a folder of their own."""
    (tmp_path / "landing").mkdir()
    return landed(tmp_path / "landing", SEED_ROWS)


def test_qlik_ct_csv_truncated_inside_a_row(tmp_path: Path) -> None:
    path = qlik_ct_file(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 12])
    run, out = export_stream(tmp_path, ("--source", "qlik-ct"), input_path=path.parent)
    assert_refused(run, out, re.escape(path.name), rf"\bline {len(SEED_ROWS)}\b")


def test_qlik_ct_csv_truncated_inside_a_quoted_field(tmp_path: Path) -> None:
    path = qlik_ct_file(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    fields = lines[-1].split(b",")
    path.write_bytes(b"".join(lines[:-1]) + b",".join(fields[:3]) + b',"unterminated, field')
    run, out = export_stream(tmp_path, ("--source", "qlik-ct"), input_path=path.parent)
    assert_refused(run, out, re.escape(path.name), rf"\bline {len(lines)}\b")


def test_qlik_ct_csv_garbage(tmp_path: Path) -> None:
    path = qlik_ct_file(tmp_path)
    path.write_bytes(random.Random(6).randbytes(1 << 16))
    run, out = export_stream(tmp_path, ("--source", "qlik-ct"), input_path=path.parent)
    assert_refused(run, out, re.escape(path.name))


def test_qlik_ct_csv_garbage_after_good_rows(tmp_path: Path) -> None:
    path = qlik_ct_file(tmp_path)
    path.write_bytes(path.read_bytes() + b"\xff\xfe\x80\x81 not utf-8\n")
    run, out = export_stream(tmp_path, ("--source", "qlik-ct"), input_path=path.parent)
    assert_refused(run, out, re.escape(path.name), rf"\bline {len(SEED_ROWS) + 1}\b|\bbyte \d+")


def test_qlik_ct_dfm_garbage(tmp_path: Path) -> None:
    path = qlik_ct_file(tmp_path)
    path.with_suffix(".dfm").write_bytes(random.Random(8).randbytes(4096))
    run, out = export_stream(tmp_path, ("--source", "qlik-ct"), input_path=path.parent)
    assert_refused(run, out, re.escape(path.stem))
