#!/usr/bin/env bash
# Install what the project needs on a fresh machine: Debian packages named as arguments (only
# when missing), a virtualenv in .venv, and the Python packages from pyproject.toml (again only
# when pyproject.toml changed). Safe to run every time.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.contextadmin-installed
want="$(cat pyproject.toml sdk/pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing Python packages (pyproject.toml changed or first run)"
  .venv/bin/python -m pip install -q --upgrade pip
  # ag2 0.x shipped the `autogen` package that the separate `autogen` distribution ships now:
  # upgrading it in place would delete those files, so an old ag2 leaves first.
  if .venv/bin/python -m pip show ag2 2>/dev/null | grep -q "^Version: 0\."; then
    .venv/bin/python -m pip uninstall -q -y ag2
  fi
  .venv/bin/python -m pip install -q -e "./sdk[mongo,ag2,autogen,websocket]" -e ".[test,ag2,autogen]"
  echo "$want" > "$stamp"
fi
