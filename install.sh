#!/usr/bin/env bash
# Set-up for xdspub on a Debian machine with Java 17: the JDBC drivers Spark loads come from
# Debian's packages (nothing is downloaded at run time), the project installs with pip.
#   ./install.sh          the publisher
#   ./install.sh --test   the publisher and its test dependencies
set -euo pipefail
cd "$(dirname "$0")"

jars=(libxerial-sqlite-jdbc-java libpostgresql-jdbc-java libmariadb-java)
missing=()
for pkg in "${jars[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

extra=""
[ "${1:-}" = "--test" ] && extra="[test]"
# The dependencies at the versions the tests passed with (constraints.txt).
python3 -m pip install -q --disable-pip-version-check -c constraints.txt -e ".${extra}"
# The classes Spark's JVM loads at start, archived once: a session starts in about half the
# time (publisher/plans/session.py).
python3 -m publisher.plans.session
