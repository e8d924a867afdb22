"""The ``xdspub`` command line (docs/parameters.md).

Only click is imported at start: Spark, SQLAlchemy and lxml load when a command runs, so
``xdspub --help`` answers at once. Every option is also a key of the ``--config`` TOML file
and an environment variable ``XDSPUB_<NAME>``; a flag beats the variable, which beats the
file, which beats the default."""

from __future__ import annotations

import os
import signal
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from publisher.errors import EXIT_INTERNAL, STOP_SIGNALS, Interrupted, XdspubError
from publisher.model.statuses import reason_text
from publisher.source.cdc.formats import FORMATS

EXIT_ROW_ERRORS = 1
DEFAULT_QUERY_LIMIT = 10000  # Query Limit of the polling service (docs/parameters.md)
# The --hash-columns key: a TOML key and an environment variable, never a flag, so that it
# shows in no process list (docs/parameters.md, Column policy).
HASH_KEY = "hash_key"
HASH_KEY_VARIABLE = "XDSPUB_HASH_KEY"


def _load_config(ctx: click.Context, _param: click.Parameter, path: str | None) -> str | None:
    """The --config file's values as the command's defaults. One file serves every command
    that reads one: a key of another command's option is passed over, a key of none is an
    error, and so is a value of the wrong type, named by file and key (docs/parameters.md,
    Where parameters come from)."""
    if path:
        try:
            with open(path, "rb") as stream:
                data = tomllib.load(stream)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise click.BadParameter(f"cannot read {path}: {exc}") from None
        data = _flatten(data)
        ctx.meta[HASH_KEY] = data.pop(HASH_KEY, None)
        own = _config_keys(ctx.command)
        known = {key for command in cli.commands.values() for key in _config_keys(command)}
        unknown = sorted(k for k in data if k.replace("-", "_") not in known)
        if unknown:
            raise click.BadParameter(f"{path}: unknown key(s) {', '.join(unknown)}")
        ctx.default_map = {}
        for key, value in data.items():
            param = own.get(key.replace("-", "_"))
            if param is None:
                continue  # another command's
            # A repeatable option's key takes a list, or one string ("usr,grp").
            if getattr(param, "multiple", False) and isinstance(value, str):
                value = [value]
            try:
                param.process_value(ctx, value)
            except click.BadParameter as exc:
                raise click.BadParameter(f"{path}: {key}: {exc.message}") from None
            ctx.default_map[param.name] = value
    return path


def _config_keys(command: click.Command) -> dict[str, click.Parameter]:
    """The --config keys ``command`` reads (none when it takes no --config): its options'
    long names, - as _, and Spark's own name for --master."""
    if not any(param.name == "config" for param in command.params):
        return {}
    keys = {opt.lstrip("-").replace("-", "_"): param for param in command.params
            for opt in param.opts if opt.startswith("--") and param.name != "config"}
    if "master" in keys:
        keys["spark.master"] = keys["master"]
    return keys


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested TOML tables as dotted keys: ``[spark] master = ...`` is ``spark.master``."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _hash_key(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the hash key: XDSPUB_HASH_KEY, else the --config file's."""
    key = os.environ.get(HASH_KEY_VARIABLE) or click.get_current_context().meta.get(HASH_KEY)
    if key is not None and not isinstance(key, str):
        raise click.BadParameter(f"{HASH_KEY} must be a string", param_hint="--config")
    return {**options, "hash_key": key}


def _option(*declarations: str, **kwargs: Any) -> Callable:
    env = "XDSPUB_" + declarations[0].lstrip("-").replace("-", "_").upper()
    return click.option(*declarations, envvar=env, show_envvar=True, **kwargs)


class _TableNames(click.ParamType):
    """Table names, T[,T...]: XDSPUB_TABLES splits at commas, not at blanks (a name may
    hold one)."""

    name = "tables"
    envvar_list_splitter = ","


def _table_names(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """--tables T[,T...] (repeatable): each name once, in the order given, the blanks
    around it stripped."""
    names = (name.strip() for value in values for name in value.split(","))
    return tuple(dict.fromkeys(name for name in names if name))


def _tables_option(help_text: str, name: str = "tables") -> Callable:
    return _option("--tables", name, multiple=True, type=_TableNames(), callback=_table_names,
                   metavar="T[,T...]", help=help_text)


def _columns_option(flag: str, help_text: str) -> Callable:
    """--exclude-columns, --hash-columns: TABLE.COLUMN[,TABLE.COLUMN...] (repeatable)."""
    return _option(flag, multiple=True, type=_TableNames(), callback=_table_names,
                   metavar="T.C[,T.C...]", help=help_text)


publisher_user_option = _option("--publisher-user", help="Database user of the publisher (loopback).")
allow_loopback_option = _option("--allow-loopback", is_flag=True, help="Publish the publisher's own changes.")
future_events_option = _option("--future-events", is_flag=True, help="Order by event_time; future rows wait.")
max_value_length_option = _option(
    "--max-value-length", type=click.IntRange(min=1), default=16 * 1024 * 1024, show_default=True,
    help="Longest table_key or value published, in characters; longer: E.")
time_syntax_option = _option(
    "--time-syntax", type=click.IntRange(1, 3), default=1, show_default=True,
    help="Date, time and timestamp values: 1 seconds since 1970, 2 canonical string, 3 java string.")
exclude_columns_option = _columns_option(
    "--exclude-columns", "Columns never read, published nor logged (repeatable).")
hash_columns_option = _columns_option(
    "--hash-columns", "Columns published as a keyed SHA-256 of their value; the key from "
    "XDSPUB_HASH_KEY or the --config file's hash_key (repeatable).")


config_option = click.option(
    "--config",
    type=click.Path(dir_okay=False),
    is_eager=True,
    expose_value=False,
    callback=_load_config,
    help="TOML file whose keys are these options' names.",
)
db_option = _option("--db", "db_url", required=True, help="SQLAlchemy URL of the database.")
source_db_option = _option(
    "--db", "db_url", help="SQLAlchemy URL of the database (the event log's, or the change tables')."
)
schema_option = _option("--schema", default="indirect", show_default=True, help="Schema Name.")
log_table_option = _option(
    "--log-table", default="indirect_process", show_default=True, help="Event Log Table Name."
)


def _options(*options: Callable) -> Callable:
    """One decorator for ``options``, in the order --help lists them."""

    def decorate(command: Callable) -> Callable:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


class _DeleteLimitType(click.ParamType):
    name = "N|N%|none"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from publisher.settings import DeleteLimit

        if isinstance(value, DeleteLimit):
            return value
        try:
            return DeleteLimit.parse(str(value))
        except ValueError:
            self.fail(f"{value!r} is not N, N% or none", param, ctx)


max_deletes_option = _option(
    "--max-deletes", type=_DeleteLimitType(), default="500", show_default=True,
    help="Most deletes of one class a cycle publishes: N, N% of the objects the class had, or "
    "none; a cycle past it is held (docs/delivery.md, Delete guard).")
database_options = _options(config_option, db_option, schema_option, log_table_option)
state_dir_option = _option(
    "--state-dir", type=click.Path(file_okay=False, path_type=Path),
    help="Triggerless states and the publications' records: last cycle, delete guard hold, "
    "E and W reasons (default: $XDG_STATE_HOME/xdspub).")
# --mode and the triggerless options (_triggerless).
mode_options = _options(
    _option("--mode", type=click.Choice(["eventlog", "triggerless"]), default="eventlog",
            show_default=True,
            help="Publish the event log, or compare the tables with the last cycle's state."),
    state_dir_option,
    _option("--startup", type=click.Choice(["resync", "future", "all"]),
            help="Triggerless, without a usable state: publish every object's current state "
            "(the first run's default), only record it, or add every object. A state that "
            "exists but cannot be used is an error without it."),
)
publishing_options = _options(
    config_option, source_db_option, schema_option, log_table_option, publisher_user_option,
    allow_loopback_option, future_events_option,
    _option("--delete-processed", is_flag=True, help="Delete S and W rows, not mark them."),
    _tables_option("Table selection: only these classes, with their child tables "
                   "(repeatable; default: every class). export --source FORMAT: "
                   "table numbers ID=NAME (gbase8s, OpenEdge)."),
    _option("--query-limit", type=click.IntRange(min=1),
            help="Rows read per cycle (export: all; poll: 10000)."),
    _option("--batch-size", type=click.IntRange(1, 128), default=1, show_default=True,
            help="Commands per XDS document (directory output)."),
    _option("--dry-run", is_flag=True, help="Write the output, leave the statuses."),
    exclude_columns_option, hash_columns_option,
    _option("--lineage", type=click.Path(),
            help="FILE or DIR: one JSON line per consumed row, naming the document "
            "that carried it or the rule that consumed it."),
    max_value_length_option, time_syntax_option,
    _option("--master", "spark_master", default="local[*]", show_default=True,
            help="Spark master URL."),
    _option("--small-cycle-rows", type=click.IntRange(min=0), default=10_000, show_default=True,
            help="Cycles of at most this many rows run in the driver, not on Spark."),
    max_deletes_option,
    mode_options,
)


class _Group(click.Group):
    """Turns the publisher's own errors into their message and exit code, and any other
    error into one line and exit 5 (its traceback with --debug); SIGINT and SIGTERM end a
    command with one line and exit 130 or 143 (poll sets its own: the cycle finishes)."""

    def invoke(self, ctx: click.Context) -> Any:
        stderr = sys.stderr  # an interruption silences sys.stderr: its line goes here
        previous = {number: signal.signal(number, _interrupted) for number in STOP_SIGNALS}
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except (Interrupted, Exception) as exc:
            if (stop := _interruption(exc)) is not None:
                click.echo(f"xdspub: {stop}", file=stderr)
                ctx.exit(stop.exit_code)
            if isinstance(exc, XdspubError):
                click.echo(f"xdspub: error: {reason_text(str(exc))}", err=True)
                ctx.exit(exc.exit_code)
            if ctx.params.get("debug"):
                raise
            click.echo(f"xdspub: {_unforeseen(exc)}", err=True)
            ctx.exit(EXIT_INTERNAL)
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)


def _interrupted(number: int, _frame: object) -> None:
    """End the command now (docs/delivery.md, Stopping export): Interrupted unwinds it,
    each step undoing what it began, so no status is written and the work folders go.
    Spark's JVM, where this run started one, is killed first: no task of it goes on in
    them. What the parts torn down print then is no news, and is not shown. A second
    signal ends the process at once; what that leaves, the next run sweeps."""
    for stop in STOP_SIGNALS:
        signal.signal(stop, signal.SIG_DFL)
    sys.stderr = open(os.devnull, "w")  # to the end of the process
    session = sys.modules.get("publisher.plans.session")  # loaded only by a run that needs Spark
    if session is not None:
        session.end_jvm()
    raise Interrupted(number)


def _interruption(exc: BaseException | None) -> Interrupted | None:
    """The interruption ``exc`` is, or was raised while unwinding (a part torn down may
    fail on its way out)."""
    while exc is not None and not isinstance(exc, Interrupted):
        exc = exc.__context__
    return exc


def _unforeseen(exc: Exception) -> str:
    """An error no rule foresaw, in one line: the database's (the first line of its
    message: a person reads it), or the publisher's own, to report."""
    from sqlalchemy.exc import DBAPIError

    if isinstance(exc, DBAPIError):
        from publisher.source.database import first_line

        what = type(exc.orig).__name__ if exc.orig is not None else type(exc).__name__
        return f"database error: {reason_text(f'{what}: {first_line(exc)}')} (--debug shows where)"
    text = reason_text(f"{type(exc).__name__}: {exc}")
    return f"internal error: {text} (--debug shows where; please report it)"


@click.group(cls=_Group)
@click.version_option(package_name="xdspub")
@click.option("--debug", is_flag=True, envvar="XDSPUB_DEBUG", help="Show the traceback of an internal error.")
def cli(debug: bool) -> None:
    """xdspub: publish event-log changes as XDS documents."""


@cli.command("init-db")
@database_options
@click.option("--sample", is_flag=True, help="Also the documents' sample schema and triggers.")
@_option("--triggers", type=click.Choice(["field", "query-back", "none"]), default="field",
         show_default=True, help="Sample triggers: per-field events 1/2/4, query-back 5/6/4, or none.")
@_option("--wake", is_flag=True,
         help="Also the event log's wake-up trigger: poll starts at once when rows are logged "
         "(PostgreSQL; serialises the commits of the transactions that log rows).")
def init_db_command(db_url: str, schema: str, log_table: str, sample: bool, triggers: str,
                    wake: bool) -> None:
    """Create the event log (and the sample schema); keeps what exists."""
    from publisher.source.database import connect
    from publisher.source.identifiers import UnsafeName
    from publisher.source.init_db import init_db

    db = connect(db_url, create=True)
    try:
        names = init_db(db, schema, log_table, sample, triggers, wake)
    except UnsafeName as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"xdspub: ran {', '.join(names)} on {db.engine.url.render_as_string()}", err=True)


@cli.command()
@database_options
@_tables_option("Classes to give triggers, with their child tables (repeatable).", "selection")
@_option("--table", "tables", multiple=True, metavar="TABLE",
         help="One table alone: a class's or a child table (repeatable). Without --tables "
         "and --table: every class and child table of the schema.")
@_option("--flavour", type=click.Choice(["field", "query-back"]), default="field",
         show_default=True, help="Per-field events 1/2/4, or query-back 5/6/8/4.")
@_option("--install", is_flag=True, help="Install the triggers instead of printing them.")
@_option("--uninstall", is_flag=True,
         help="Drop the triggers (and functions) --install makes for the tables, where they exist.")
@exclude_columns_option
def triggers(db_url: str, schema: str, log_table: str, selection: tuple[str, ...],
             tables: tuple[str, ...], flavour: str, install: bool, uninstall: bool,
             exclude_columns: tuple[str, ...]) -> None:
    """Write (or install, or uninstall) publication triggers for the schema's tables
    (docs/triggers.md)."""
    from publisher.model.catalogue import UnknownTable
    from publisher.source.database import connect, run_scripts
    from publisher.source.identifiers import UnsafeName
    from publisher.source.triggers import removal_script, trigger_script

    if install and uninstall:
        raise click.UsageError("--install and --uninstall exclude each other.")
    db = connect(db_url)
    url = db.engine.url.render_as_string()
    try:
        if uninstall:
            removal = removal_script(db, schema, log_table, tables or None, selection)
        else:
            script = trigger_script(db, schema, log_table, tables or None, flavour, selection,
                                    exclude_columns)
    except (UnknownTable, UnsafeName) as exc:
        raise click.UsageError(str(exc)) from None
    if uninstall:
        if removal.ddl:
            run_scripts(db, [removal.ddl])
        for line in removal.removed:
            click.echo(f"xdspub: removed {line}", err=True)
        done = f"removed {len(removal.removed)} objects" if removal.removed else "nothing to remove"
        click.echo(f"xdspub: {done} on {url}", err=True)
        return
    for line in [*script.duplicable, *script.unindexed]:
        click.echo(f"xdspub: warning: {reason_text(line)}", err=True)
    if not install:
        click.echo(script.ddl, nl=False)
        return
    run_scripts(db, [script.ddl])
    click.echo(f"xdspub: installed {flavour} triggers on {url}", err=True)


@cli.command()
@database_options
@_tables_option("Only these classes (repeatable; default: every class with a key).")
@_option("--chunk", type=click.IntRange(min=1), default=10_000, show_default=True,
         help="Objects logged per transaction.")
@_option("--restart", is_flag=True, help="Begin a new pass even where one was interrupted.")
@_option("--quiet", is_flag=True, help="No progress display and no summary.")
def resync(db_url: str, schema: str, log_table: str, tables: tuple[str, ...], chunk: int,
           restart: bool, quiet: bool) -> None:
    """Log a type 5 event (query-back of the whole row) for every existing object, so that
    the publisher publishes them all; resumes an interrupted pass (docs/initial-load.md)."""
    from publisher.progress import row_progress_for
    from publisher.settings import Settings
    from publisher.source.database import connect
    from publisher.source.resync import resync as run_resync

    db = connect(db_url)
    settings = Settings(db_url, schema=schema, log_table=log_table, tables=tables)
    progress = row_progress_for(quiet)
    try:
        report = run_resync(db, settings, chunk, restart, progress)
    finally:
        progress.close()
    _warn_keyless(report.keyless)
    if not quiet:
        click.echo(f"xdspub: {report.summary()}", err=True)


def _pairs(values: tuple[str, ...], option: str, key: Callable[[str], Any] = str,
           value: Callable[[str], Any] = str) -> dict:
    """NAME=VALUE options as a dict, each side converted (ValueError: not valid)."""
    pairs = {}
    for text in values:
        name, sep, rest = text.partition("=")
        try:
            if not sep or not name or not rest:
                raise ValueError
            pairs[key(name)] = value(rest)
        except ValueError:
            raise click.BadParameter(f"{text!r} is not NAME=VALUE", param_hint=option) from None
    return pairs


def _require_db(options: dict[str, Any]) -> None:
    if not options["db_url"]:
        raise click.UsageError("Missing option '--db'.")


_EVENT_LOG_ONLY = (
    ("query_limit", "--query-limit"),
    ("delete_processed", "--delete-processed"),
    ("publisher_user", "--publisher-user"),
    ("allow_loopback", "--allow-loopback"),
)


def _triggerless(options: dict[str, Any]) -> Any:
    """The triggerless options (taken out of ``options``) with --mode triggerless; None
    for the event log."""
    mode, startup = options.pop("mode"), options.pop("startup")
    if mode != "triggerless":
        return None
    from publisher.outcome.state import default_state_dir
    from publisher.settings import TriggerlessOptions

    _require_db(options)
    # The event log's own options: a triggerless cycle reads whole tables and logs nothing.
    given = [option for name, option in _EVENT_LOG_ONLY if options.get(name)]
    if given:
        raise click.UsageError(f"{', '.join(given)} go with the event log, not --mode triggerless.")
    return TriggerlessOptions(options["state_dir"] or default_state_dir(), startup)


@cli.command()
@publishing_options
@_option("--out", required=True,
         help="FILE.xml, a directory, - for standard output, or a broker: amqp://... or nats://... (docs/delivery.md).")
@_option("--quiet", is_flag=True,
         help="No progress display and no summary (E and W rows are still listed).")
@_option("--source", type=click.Choice(["eventlog", *FORMATS]), default="eventlog",
         show_default=True, help="What to publish: the event log, or a change format.")
@_option("--input", "input_path", help="Change file, or - for standard input (change formats).")
@_option("--keys", multiple=True, metavar="TABLE=COL[+COL]",
         help="Key columns of a table, where the format does not name them.")
@_option("--release-deletes", is_flag=True,
         help="Publish this run's deletes even where the delete guard would hold them.")
def export(out: str, quiet: bool, source: str, input_path: str | None, keys: tuple[str, ...],
           **options: Any) -> None:
    """Publish every pending row once, as one cycle, then write the statuses; or every
    event of a change format (--source)."""
    from functools import partial

    from publisher.cycle import export as run_export
    from publisher.progress import progress_for
    from publisher.settings import Settings

    options = _hash_key(options)
    triggerless = _triggerless(options)
    if triggerless is not None:
        if source != "eventlog":
            raise click.UsageError("--mode triggerless reads the database's tables, not --source FORMAT.")
        from publisher.publications import triggerless as publication

        opening = partial(publication.opened, options=triggerless)
        report = run_export(Settings(**options), out, progress_for(quiet), opening)
        if report.state_unused and not quiet:
            click.echo(f"xdspub: {reason_text(report.state_unused)}", err=True)
    elif source == "eventlog":
        named = (("--input", input_path), ("--keys", keys))
        given = [name for name, value in named if value]
        if given:
            raise click.UsageError(f"{', '.join(given)} go with --source FORMAT, not the event log.")
        _require_db(options)
        report = run_export(Settings(**options), out, progress_for(quiet))
    else:
        from publisher.publications import change_formats
        from publisher.source.cdc.formats import ChangeOptions, open_changes

        policy = [flag for flag, name in (("--exclude-columns", "exclude_columns"),
                                          ("--hash-columns", "hash_columns")) if options[name]]
        if policy:
            raise click.UsageError(f"{', '.join(policy)} go with the database's tables, not --source FORMAT.")

        change_options = ChangeOptions(
            input=input_path,
            db_url=options["db_url"],
            schema=options["schema"] if options["db_url"] else None,
            keys=_pairs(keys, "--keys", value=lambda v: v.split("+")),
            tables=_pairs(options["tables"], "--tables", key=int),
            limit=options["query_limit"],
        )
        changes = open_changes(source, change_options)
        settings = Settings(**{**options, "tables": ()})  # numbers, not a selection
        opening = partial(change_formats.opened, changes=changes, out=out)
        report = run_export(settings, out, progress_for(quiet), opening)
    _report(report, quiet)


@cli.command()
@publishing_options
@_option("--out", required=True,
         help="A directory, - for standard output, or a broker: amqp://... or nats://... (docs/delivery.md).")
@_option("--interval", type=click.IntRange(1, 604800), default=10, show_default=True,
         help="Polling Interval, seconds.")
@_option("--heartbeat", type=click.FloatRange(min=0), default=0, show_default=True,
         help="Heartbeat Interval, minutes of idleness (0: off).")
@_option("--post-statements", help="SQL run after each active cycle.")
@_option("--metrics-port", type=click.IntRange(1, 65535), help="Serve Prometheus metrics here.")
@_option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_option("--no-wake", is_flag=True,
         help="Poll only every interval, even where the event log has the wake-up trigger.")
@_option("--max-errors", type=click.IntRange(min=0), metavar="N",
         help="Stop (exit 6) after a cycle that marks more than N rows E.")
def poll(out: str, interval: int, heartbeat: float, post_statements: str | None,
         metrics_port: int | None, log_format: str, no_wake: bool, max_errors: int | None,
         **options: Any) -> None:
    """The polling service: publish what is pending every interval, until SIGTERM."""
    from publisher.service import logs
    from publisher.service.loop import PollingService, ServiceOptions
    from publisher.settings import Settings

    _require_db(options)
    logs.configure(log_format)
    options = _hash_key(options)
    triggerless = _triggerless(options)
    options["query_limit"] = options["query_limit"] or DEFAULT_QUERY_LIMIT
    service = PollingService(
        Settings(**options),
        ServiceOptions(interval, heartbeat, post_statements, metrics_port, wake=not no_wake,
                       max_errors=max_errors),
        out,
        triggerless,
    )
    click.get_current_context().exit(service.run())


@cli.command()
@database_options
@click.argument("record_ids", nargs=-1, type=click.IntRange(min=0), metavar="[RECORD_ID ...]")
@click.option("--pending", is_flag=True, help="The pending rows (the default without RECORD_ID).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Lines for a terminal, or JSON lines for tools.")
@publisher_user_option
@allow_loopback_option
@future_events_option
@_tables_option("Table selection: only these classes, with their child tables (repeatable).")
@max_value_length_option
@time_syntax_option
@exclude_columns_option
@hash_columns_option
@max_deletes_option
@mode_options
def explain(record_ids: tuple[int, ...], pending: bool, output_format: str, **options: Any) -> None:
    """Say what a cycle would make of each row: the command that would carry it, or why it
    would be consumed, superseded or refused; with --mode triggerless, of each object that
    changed since the state; writes nothing (docs/explain.md)."""
    import json

    from publisher.explain import explain as run_explain, explain_objects, text_lines
    from publisher.settings import Settings

    options = _hash_key(options)
    triggerless = _triggerless(options)
    if triggerless is None:
        rows = run_explain(Settings(**options), record_ids, pending or not record_ids)
    elif record_ids or pending:
        raise click.UsageError("--mode triggerless explains objects, not RECORD_ID or --pending.")
    else:
        rows = explain_objects(Settings(**options), triggerless)
    out = click.get_text_stream("stdout")
    if output_format == "json":
        out.writelines(json.dumps(row.as_json(), ensure_ascii=False) + "\n" for row in rows)
        return
    if not out.isatty():  # styles are for a terminal; rich costs much a line
        out.writelines("".join(text for text, _ in line) + "\n" for line in text_lines(rows))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=True)
    for line in text_lines(rows):
        console.print(Text.assemble(*line))


def _utc_time(_ctx: click.Context, _param: click.Parameter, text: str | None) -> Any:
    """--before TIME: an ISO 8601 date and time, UTC unless it gives its offset (the event
    log's event_time is UTC), as a naive UTC datetime."""
    if text is None:
        return None
    from datetime import datetime, timezone

    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an ISO 8601 date and time "
                                 "(2026-01-31T12:00:00, UTC unless an offset is given)") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment


@cli.command()
@database_options
@_option("--through", type=click.IntRange(min=0), metavar="RECORD_ID",
         help="Skip the pending rows up to this record_id, inclusive.")
@_option("--before", metavar="TIME", callback=_utc_time,
         help="Skip the pending rows whose event_time is before TIME (ISO 8601; UTC unless "
         "an offset is given).")
@_tables_option("Skip only the rows of these classes and their child tables (repeatable).")
@_option("--delete-processed", is_flag=True, help="Delete the rows, not mark them S.")
@_option("--dry-run", is_flag=True, help="Count the rows, skip none.")
def skip(through: int | None, before: Any, **options: Any) -> None:
    """Consume pending rows without publishing them (S): the cut-over from a running
    publisher (docs/statuses.md)."""
    from publisher.outcome.skip import skip_pending
    from publisher.settings import Settings

    skipped = skip_pending(Settings(**options), through, before)
    click.echo(f"xdspub: {skipped.summary('skip', 'skipped', options['dry_run'])}", err=True)


@cli.command()
@database_options
@click.argument("record_ids", nargs=-1, type=click.IntRange(min=0), metavar="[RECORD_ID ...]")
@_option("--from", "first", type=click.IntRange(min=0), metavar="RECORD_ID",
         help="Rows from this record_id on, inclusive.")
@_option("--through", "last", type=click.IntRange(min=0), metavar="RECORD_ID",
         help="Rows up to this record_id, inclusive.")
@_option("--status", "statuses", multiple=True, type=click.Choice(["S", "W", "E", "F"]),
         help="Rows of this status (repeatable).")
@_option("--reason", metavar="TEXT",
         help="Rows whose reason holds TEXT (case-sensitive): as the publication's record under "
         "--state-dir keeps it, or the last --reason-log gives it.")
@_option("--reason-log", type=click.Path(exists=True), metavar="FILE|DIR",
         help="Where else the reasons were written: a --lineage file or folder, or a poll "
         "--log-format json log.")
@state_dir_option
@_option("--dry-run", is_flag=True, help="Count the rows, requeue none.")
def requeue(record_ids: tuple[int, ...], first: int | None, last: int | None,
            statuses: tuple[str, ...], reason: str | None, reason_log: str | None,
            **options: Any) -> None:
    """Set rows back to N, to be published again (docs/statuses.md): those that meet
    every selector given; at least one is needed."""
    from pathlib import Path

    from publisher.outcome.requeue import Requeue, requeue as run_requeue
    from publisher.settings import Settings

    selection = Requeue(record_ids, first, last, statuses, reason,
                        Path(reason_log) if reason_log else None)
    requeued = run_requeue(Settings(**options), selection)
    click.echo(f"xdspub: {requeued.summary('requeue', 'requeued', options['dry_run'])}", err=True)


@cli.command()
@database_options
@mode_options
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Lines for a terminal, or one JSON object for tools.")
def status(output_format: str, **options: Any) -> None:
    """What the publication is doing: pending, E and W rows, the last cycle, the lock, the
    delete guard's hold, the triggerless state (docs/status.md)."""
    import json

    from publisher.settings import Settings
    from publisher.status import publication_status, status_text

    triggerless = _triggerless(options)
    found = publication_status(Settings(**options), triggerless)
    click.echo(json.dumps(found, default=str) if output_format == "json" else status_text(found))


@cli.command()
@database_options
@mode_options
@_option("--class", "classes", multiple=True, metavar="CLASS",
         help="Release only this class's held deletes (repeatable; default: every class held).")
def release(classes: tuple[str, ...], **options: Any) -> None:
    """Let the next cycle publish the deletes the delete guard held, as many as were held
    (docs/delivery.md, Delete guard)."""
    from publisher.outcome.record import PublicationRecord, publication_name
    from publisher.settings import Settings
    from publisher.source.database import connect

    triggerless = options.pop("mode") == "triggerless"
    options.pop("startup")
    settings = Settings(**options)
    with connect(settings.db_url) as db:
        record = PublicationRecord(settings.state_dir, publication_name(db.identity, settings, triggerless))
    released = record.release(classes)
    if not released:
        click.echo("xdspub: nothing is held" + (f" of {', '.join(classes)}" if classes else ""), err=True)
        return
    for held in released:
        click.echo(f"xdspub: released {held.text()}", err=True)


@cli.command()
@click.option("--keep", type=click.Path(file_okay=False), help="Keep the demo database here.")
def demo(keep: str | None) -> None:
    """Walk through the documented examples (Tables 5-16 to 5-20), then changes of the
    logical class usr (child tables, references), on SQLite."""
    from publisher.demo import run_demo

    run_demo(keep)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
def validate(paths: tuple[str, ...]) -> None:
    """Check XDS documents (files, or every *.xml under a directory) against the shipped
    schema (docs/validation.md): exit 0 when all are valid, 1 with one line per problem."""
    from pathlib import Path

    from publisher.render.validate import documents, validate_paths

    files = [document for path in paths for document in documents(Path(path))]
    problems = validate_paths(files)
    for problem in problems:
        click.echo(str(problem), err=True)
    invalid = len({problem.file for problem in problems})
    click.echo(f"xdspub: {len(files)} documents, {invalid} invalid", err=True)
    if problems:
        click.get_current_context().exit(1)


wait_option = click.option(
    "--wait", type=click.FloatRange(min=0), default=2.0, show_default=True,
    help="Stop reading a broker when no document came for this many seconds.")


@cli.command()
@click.argument("url")
@click.option("--count", type=click.IntRange(min=1), help="Read at most this many documents.")
@wait_option
@click.option("--out", default="-", show_default=True,
              help="A directory (a file per document, named as in a directory of documents), or -.")
def consume(url: str, count: int | None, wait: float, out: str) -> None:
    """Read the documents delivered to a broker (docs/delivery.md): URL as --out names it,
    with queue=Q for RabbitMQ (its messages are taken off the queue; a JetStream stream
    keeps them)."""
    from pathlib import Path

    from publisher.delivery.broker import masked, received
    from publisher.delivery.documents import write_durably

    folder = None if out == "-" else Path(out)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    taken = 0
    for message in received(url, count, wait):
        taken += 1
        if folder is None:
            sys.stdout.buffer.write(message.body if message.body.endswith(b"\n") else message.body + b"\n")
            sys.stdout.buffer.flush()
        else:
            write_durably(folder / message.file_name(taken), lambda stream: stream.write(message.body))
    click.echo(f"xdspub: {taken} documents read from {masked(url)}", err=True)


@cli.command()
@click.argument("sources", nargs=-1, metavar="[SOURCE ...]")
@click.option("--mirror", required=True, type=click.Path(dir_okay=False),
              help="The mirror: an SQLite file, created if missing.")
@wait_option
def apply(sources: tuple[str, ...], mirror: str, wait: float) -> None:
    """Apply XDS documents to a mirror of the published objects, as an identity engine
    takes them (docs/mirror.md): SOURCE is a folder of documents (in name order), a file,
    - for standard input (the default), or a broker URL as consume reads it. Documents
    applied before are skipped. Exit 1 when a command cannot be applied."""
    from pathlib import Path

    from publisher.mirror import apply_documents

    report = apply_documents(sources, Path(mirror), wait)
    if report.failure is not None:
        click.echo(f"xdspub: error: {reason_text(str(report.failure))}", err=True)
    click.echo(f"xdspub: {report.summary()}", err=True)
    if report.failure is not None:
        click.get_current_context().exit(1)


@cli.command()
@database_options
@click.option("--mirror", required=True, type=click.Path(dir_okay=False, exists=True),
              help="The mirror xdspub apply keeps.")
@_tables_option("Only these classes, with their child tables (repeatable; default: every class).")
@time_syntax_option
@exclude_columns_option
@hash_columns_option
def verify(mirror: str, **options: Any) -> None:
    """Compare a mirror (xdspub apply) with the database's current objects, as a cycle
    publishes them (docs/mirror.md): one line per difference, exit 1 when any."""
    from pathlib import Path

    from publisher.mirror import compare_mirror
    from publisher.settings import Settings

    verification = compare_mirror(Settings(**_hash_key(options)), Path(mirror))
    out = click.get_text_stream("stdout")
    out.writelines(f"{reason_text(str(difference))}\n" for difference in verification.differences)
    out.flush()
    _warn_keyless(verification.keyless)
    click.echo(f"xdspub: {verification.summary()}", err=True)
    if verification.differences:
        click.get_current_context().exit(1)


def _report(report: Any, quiet: bool) -> None:
    _warn_keyless(report.keyless)
    for line in report.note_lines():
        click.echo(f"xdspub: {line}", err=True)
    if not quiet:
        click.echo(f"xdspub: {report.summary()}", err=True)
        click.echo(f"xdspub: {report.timing()}", err=True)
    if hint := report.loopback_hint():
        click.echo(f"xdspub: hint: {hint}", err=True)
    if report.errors:
        click.get_current_context().exit(EXIT_ROW_ERRORS)


def _warn_keyless(names: list[str]) -> None:
    """The keyless classes a command passed by, named once (docs/classes.md, Keys), --quiet
    or not."""
    from publisher.model.catalogue import keyless_warning

    if warning := keyless_warning(names):
        click.echo(f"xdspub: warning: {warning}", err=True)
