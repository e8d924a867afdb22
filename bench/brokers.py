"""Delivery to RabbitMQ and to NATS JetStream against the directory sink, in the same run.

    python3 bench/brokers.py [--rows 1000000] [--burst 20000] [--only burst|backlog] [--keep]
        [--url postgresql+psycopg://root@127.0.0.1:5432/test]

It makes, each with a name of its own, a topic exchange in RabbitMQ (127.0.0.1:5672, guest)
with a durable queue bound to it, and a JetStream stream in NATS (127.0.0.1:4222; file
storage, no limit on messages or bytes, the default duplicate window), then
1. the burst: for each sink (a directory, NATS, RabbitMQ), `xdspub poll` at Polling
   Interval 1, one document per command, on a schema of its own, warm, publishes --burst
   trigger-made changes committed at once (bench/service_latency.py): changes/s, and each
   broker's rate over the directory's (target: at least 0.7);
2. the backlog: --rows rows over a tenth as many objects (bench/backlog.py), exported by
   `xdspub export` on the Spark plan to each sink at --batch-size 128 and at 1, the
   statuses set back to 'N' and the table rewritten (VACUUM FULL) before each export, so
   each publishes the same rows from the same table: the cycle's seconds (from the export's
   timing line, Spark start apart), and each broker's over the directory's at the same
   batch size (targets: at most 1.2 at 128, at most 2.0 at 1).
Each run's documents are counted where they landed (files, queue, stream), and must be as
many for the brokers as for the directory. The queue and the stream are emptied after each
run; the exchange, queue, stream, schemas and work folder are removed at the end unless
--keep."""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import nats
import pika
import psycopg
import sqlalchemy as sa
from nats.js.api import StorageType, StreamConfig

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import scale  # noqa: E402  (bench/ is no package)
import service_latency  # noqa: E402

AMQP = "amqp://guest:guest@127.0.0.1:5672/%2F"
NATS = "nats://127.0.0.1:4222"
DIRECTORY = "directory"
SINKS = (DIRECTORY, "NATS", "RabbitMQ")
BATCH_SIZES = (128, 1)
WRITING = re.compile(r"writing documents ([0-9.]+) s")  # the sink's phase in the timing line
TARGETS = {"burst": (0.7, "at least"), 128: (1.2, "at most"), 1: (2.0, "at most")}


class Brokers:
    """The bench's exchange, queue and stream, and the --out URL of each broker."""

    def __init__(self) -> None:
        token = uuid.uuid4().hex[:8]
        self.exchange = self.queue = f"xdspub-bench-{token}"
        self.stream = f"XDSPUB_BENCH_{token}"
        self.subject = f"xdspub_bench_{token}"
        # {class}: the routing key and subject name each document's class, as users route.
        self.urls = {
            "NATS": f"{NATS}/{self.subject}.{{class}}?stream={self.stream}",
            "RabbitMQ": f"{AMQP}?exchange={self.exchange}&routing_key={self.subject}.{{class}}",
        }

    def _channel(self) -> tuple[pika.BlockingConnection, pika.adapters.blocking_connection.BlockingChannel]:
        connection = pika.BlockingConnection(pika.URLParameters(AMQP))
        return connection, connection.channel()

    async def _jetstream(self, action):
        connection = await nats.connect(NATS)
        try:
            return await action(connection.jetstream())
        finally:
            await connection.close()

    def make(self) -> None:
        connection, channel = self._channel()
        channel.exchange_declare(self.exchange, "topic", durable=True)
        channel.queue_declare(self.queue, durable=True)
        channel.queue_bind(self.queue, self.exchange, f"{self.subject}.#")
        connection.close()
        config = StreamConfig(name=self.stream, subjects=[f"{self.subject}.>"], storage=StorageType.FILE,
                              max_msgs=-1, max_bytes=-1)
        asyncio.run(self._jetstream(lambda js: js.add_stream(config)))

    def counts(self) -> dict[str, int]:
        """Messages in the stream and in the queue."""
        connection, channel = self._channel()
        queued = channel.queue_declare(self.queue, passive=True).method.message_count
        connection.close()

        async def stored(js) -> int:
            return (await js.stream_info(self.stream)).state.messages

        return {"NATS": asyncio.run(self._jetstream(stored)), "RabbitMQ": queued}

    def empty(self) -> None:
        connection, channel = self._channel()
        channel.queue_purge(self.queue)
        connection.close()
        asyncio.run(self._jetstream(lambda js: js.purge_stream(self.stream)))

    def remove(self) -> None:
        connection, channel = self._channel()
        channel.queue_delete(self.queue)
        channel.exchange_delete(self.exchange)
        connection.close()
        asyncio.run(self._jetstream(lambda js: js.delete_stream(self.stream)))


def out_of(brokers: Brokers, folder: Path, sink: str) -> str:
    return str(folder) if sink == DIRECTORY else brokers.urls[sink]


def checked(counts: dict[str, int], what: str) -> None:
    """Exit when a broker holds another number of documents than the directory."""
    if any(count != counts[DIRECTORY] for count in counts.values()):
        sys.exit(f"{what}: the sinks hold different numbers of documents: {counts}")


def burst(args: argparse.Namespace, brokers: Brokers, work: Path) -> dict[str, float]:
    """Changes a second of the service's burst, by sink."""
    rates, counts = {}, {}
    for sink in SINKS:
        folder = work / f"burst-{sink}"
        folder.mkdir()
        with service_latency.polling(args.url, out_of(brokers, folder, sink), folder.with_suffix(".log")) as polled:
            polled.warm_up()
            seconds = polled.burst(1, args.burst)
        rates[sink] = args.burst / seconds
        counts[sink] = cleared(brokers, folder, sink)
        print(f"  {sink}: {args.burst} changes published in {seconds:.2f} s, {rates[sink]:,.0f} changes/s; "
              f"{counts[sink]} documents (the warm-up's with them)")
    checked(counts, "burst")
    return rates


def cleared(brokers: Brokers, folder: Path, sink: str) -> int:
    """How many documents ``sink`` holds (the folder's files, or the broker's messages),
    then removed for the next run."""
    if sink == DIRECTORY:
        count = len(list(folder.glob("*.xml")))
        shutil.rmtree(folder)
    else:
        count = brokers.counts()[sink]
        brokers.empty()
    return count


def reset(conninfo: str, log: str) -> None:
    """Every row pending again, in a table rewritten, as the first export found it."""
    # A connection each time: none idle for minutes, which a test killing sessions would end.
    with psycopg.connect(conninfo, autocommit=True) as conn:  # VACUUM runs outside a transaction
        conn.execute(f"UPDATE {log} SET status = 'N' WHERE status <> 'N'")
        conn.execute(f"VACUUM FULL ANALYZE {log}")


def backlog_exports(args: argparse.Namespace, brokers: Brokers, work: Path, conninfo: str,
                    schema: str) -> dict[int, dict[str, float]]:
    """Cycle seconds of the backlog's export, by batch size and sink."""
    log = f"{schema}.indirect_process"
    cycles: dict[int, dict[str, float]] = {}
    for batch_size in BATCH_SIZES:
        cycles[batch_size], counts = {}, {}
        for sink in SINKS:
            reset(conninfo, log)
            folder = work / f"backlog-{batch_size}-{sink}"
            print(f"  {sink}, --batch-size {batch_size}:")
            cycle, _, wall, _, _ = scale.timed_export(
                args.url, schema, log, out_of(brokers, folder, sink), batch_size, folder)
            cycles[batch_size][sink] = cycle
            counts[sink] = cleared(brokers, folder, sink)
            # the phase that differs between sinks; the others are the same work, and vary
            writing = WRITING.search(folder.with_suffix(".err").read_text())
            print(f"    cycle {cycle:.2f} s, of which writing documents {writing[1] if writing else '?'} s; "
                  f"wall {wall:.2f} s; {counts[sink]} documents")
        checked(counts, f"backlog at --batch-size {batch_size}")
    return cycles


def ratio_line(name: str, measure: str, figures: dict[str, float], target: tuple[float, str],
               shape: str) -> str:
    bound, side = target
    ratios = []
    for broker in SINKS[1:]:
        ratio = figures[broker] / figures[DIRECTORY]
        met = ratio >= bound if side == "at least" else ratio <= bound
        ratios.append(f"{broker} {ratio:.2f} ({'met' if met else 'NOT met'})")
    shown = ", ".join(f"{sink} {value:{shape}}" for sink, value in figures.items())
    return f"{name:<26}{measure}: {shown}; broker / directory: {'; '.join(ratios)} (target {side} {bound})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql+psycopg://root@127.0.0.1:5432/test")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--burst", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=("burst", "backlog"))
    parser.add_argument("--keep", action="store_true",
                        help="keep the exchange, queue, stream, backlog schema and work folder")
    args = parser.parse_args()

    brokers = Brokers()
    brokers.make()
    work = Path(tempfile.mkdtemp(prefix="xdspub-brokers-"))
    schema = f"xb_{uuid.uuid4().hex[:8]}"
    # psycopg takes the libpq form of the URL, without SQLAlchemy's +driver.
    conninfo = sa.engine.make_url(args.url).set(drivername="postgresql").render_as_string(False)
    lines = []
    try:
        if args.only != "backlog":
            print(f"burst of {args.burst} trigger-made changes, poll at Polling Interval 1:")
            rates = burst(args, brokers, work)
            lines.append(ratio_line("burst", "changes/s", rates, TARGETS["burst"], ",.0f"))
        if args.only != "burst":
            objects = max(1, args.rows // 10)
            scale.backlog.load(args.url, schema, args.rows, objects, args.seed)
            print(f"backlog of {args.rows} rows over {objects} objects, xdspub export:")
            cycles = backlog_exports(args, brokers, work, conninfo, schema)
            for batch_size, figures in cycles.items():
                lines.append(ratio_line(f"backlog, --batch-size {batch_size}", "cycle s", figures,
                                        TARGETS[batch_size], ".2f"))
        print("", *lines, sep="\n")
    finally:
        if args.keep:
            print(f"kept: exchange and queue {brokers.queue}, stream {brokers.stream}")
        else:
            brokers.remove()
        scale.clean_up(psycopg.connect(conninfo, autocommit=True), schema, work, args.keep)


if __name__ == "__main__":
    main()
