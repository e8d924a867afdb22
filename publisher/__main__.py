from publisher.cli import cli

cli(prog_name="xdspub")
