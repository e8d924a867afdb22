#!/usr/bin/env bash
# Set-up for xdspub on a Debian machine with Java 17: the JDBC drivers Spark loads come from
# Debian's packages (nothing is downloaded at run time); the project is installed in a
# virtual environment of its own, .venv beside this script, made with the first python3 on
# the PATH (Debian's own Python lets pip install nothing outside one: PEP 668).
#   ./install.sh          the publisher: .venv/bin/xdspub
#   ./install.sh --test   and its test dependencies: .venv/bin/python -m pytest
set -euo pipefail
cd "$(dirname "$0")"
venv=.venv

packages=()
for pkg in libxerial-sqlite-jdbc-java libpostgresql-jdbc-java libmariadb-java; do
  dpkg -s "$pkg" >/dev/null 2>&1 || packages+=("$pkg")
done
# Debian ships the virtual environments' pip (ensurepip) apart: python3.X-venv.
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  packages+=("python$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv")
fi
if [ ${#packages[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${packages[@]}"
fi

# A virtual environment that runs is kept (a second run only brings it up to date); one
# whose Python is gone, or that lacks pip, is made anew.
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  python3 -m venv --clear "$venv"
fi

extra=""
[ "${1:-}" = "--test" ] && extra="[test]"
# The dependencies at the versions the tests passed with (constraints.txt). Editable: Spark's
# Python workers run the venv's interpreter (publisher/plans/session.py), on this code.
"$venv/bin/python" -m pip install -q --disable-pip-version-check -c constraints.txt -e ".${extra}"
# The classes Spark's JVM loads at start, archived once: a session starts in about half the
# time (publisher/plans/session.py).
"$venv/bin/python" -m publisher.plans.session
