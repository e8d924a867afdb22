"""The examples that ship in examples/ (docs/delivery.md, Running as a service): the
configuration serves export and poll in real runs, the systemd unit parses and its command
line is the CLI's, and the container file runs commands that exist."""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from publisher.cli import cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CONFIG = EXAMPLES / "xdspub.toml"
INSTALLED_CONFIG = "/etc/xdspub/xdspub.toml"  # where the unit and the container read it


def accepted(args: list[str]) -> click.Context:
    """The CLI's parse of a command line (the installed configuration read from
    examples/): every option, value and configuration key checked, nothing run."""
    args = [str(CONFIG) if arg == INSTALLED_CONFIG else arg for arg in args]
    root = click.Context(cli, info_name="xdspub")
    command = cli.get_command(root, args[0])
    assert command is not None, f"xdspub has no command {args[0]!r}"
    return command.make_context(args[0], args[1:], parent=root)


def environment(db, out: Path) -> dict[str, str]:
    """The example's database and output, as a deployment's variables would override them."""
    return {"XDSPUB_DB": db.settings.db_url, "XDSPUB_OUT": str(out)}


def test_the_example_config_serves_export(sample_db, tmp_path):
    sample_db.log(("idu=1", 4, "usr"), ("idu=2", 4, "usr"))
    out = tmp_path / "documents"
    result = CliRunner().invoke(cli, ["export", "--config", str(CONFIG)], env=environment(sample_db, out))
    assert result.exit_code == 0, result.output
    assert "2 rows read, 2 commands, 2 documents; statuses S=2" in result.stderr
    assert len(list(out.glob("*.xml"))) == 2


@pytest.mark.slow  # the service as a process of its own
def test_the_example_config_serves_poll(sample_db, tmp_path):
    sample_db.log(("idu=1", 4, "usr"))
    out = tmp_path / "documents"
    process = subprocess.Popen(
        [sys.executable, "-m", "publisher", "poll", "--config", str(CONFIG)],
        env={**os.environ, **environment(sample_db, out)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )
    try:
        lines = []
        for line in process.stderr:  # the example's log-format: JSON lines
            lines.append(json.loads(line))
            if lines[-1]["event"] == "cycle":
                break
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(120) == 0
    assert lines[-1]["rows"] == 1 and lines[-1]["documents"] == 1
    assert sample_db.statuses() == {1: "S"} and len(list(out.glob("*.xml"))) == 1


def unit() -> tuple[str, configparser.ConfigParser]:
    text = (EXAMPLES / "xdspub.service").read_text()
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read_string(text)
    return text, parser


def test_the_systemd_unit_parses_and_runs_the_service(tmp_path):
    text, parser = unit()
    assert parser.sections() == ["Unit", "Service", "Install"]
    service = parser["Service"]
    assert service["Type"] == "exec" and service["User"] == "xdspub"
    assert service["KillMode"] == "mixed"  # SIGTERM to the service's own process alone
    assert parser["Install"]["WantedBy"] == "multi-user.target"
    program, *args = shlex.split(service["ExecStart"])
    assert Path(program).is_absolute() and Path(program).name == "xdspub"
    assert args[0] == "poll" and accepted(args).params["log_format"] == "json"
    verify = shutil.which("systemd-analyze")
    if verify is None:
        return  # the structural checks above stand alone
    # systemd checks that the program exists: the one installed here stands for it.
    installed = shutil.which("xdspub") or sys.executable
    copy = tmp_path / "xdspub.service"
    copy.write_text(text.replace(program, installed))
    result = subprocess.run([verify, "verify", str(copy)], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def instructions(path: Path) -> list[tuple[str, str]]:
    """(keyword, rest) of each instruction, continuation lines joined, comments left out."""
    text = re.sub(r"\\\n", " ", "\n".join(
        line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")))
    return [tuple(line.split(None, 1)) for line in text.splitlines() if line.strip()]


def test_the_container_file_runs_commands_that_exist():
    steps = instructions(EXAMPLES / "Containerfile")
    assert steps[0][0] == "FROM" and ("COPY", ". .") in steps  # the repository, into WORKDIR
    for keyword, rest in steps:
        if keyword == "RUN":
            for command in re.split(r"&&|\|\||;|\|", rest):
                program = shlex.split(command)[0]
                if program.startswith("./"):  # the repository's own, copied in
                    assert os.access(ROOT / program, os.X_OK), program
                else:
                    assert shutil.which(program), program
    (command,) = [json.loads(rest) for keyword, rest in steps if keyword == "CMD"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert command[0] in scripts and command[1] == "poll"
    assert accepted(command[1:]).params["out"] == "/var/lib/xdspub/documents"
