#!/bin/sh
# clients/python/tests/run.sh [BUILD_DIR]: install the Python client as its
# users do, with Debian's /usr/bin/python3 and nothing from the network, and
# run its tests against a live stepcastd. Ends with `N passed, N failed`.
#
#   1. a venv: /usr/bin/python3 -m venv --system-site-packages B/venv, then
#      B/venv/bin/pip install --no-build-isolation ./clients/python
#   2. a folder: /usr/bin/python3 -m pip install --no-deps --no-build-isolation
#      --target B/python-target ./clients/python (imported by the check below)
set -eu
cd "$(dirname "$0")/../../.."
B=${1:-build}
PY=/usr/bin/python3
rm -rf "$B/venv" "$B/python-target" clients/python/build
$PY -m venv --system-site-packages "$B/venv"
"$B/venv/bin/pip" install -q --root-user-action=ignore --no-index --no-build-isolation ./clients/python
$PY -m pip install -q --root-user-action=ignore --no-index --no-deps --no-build-isolation --target "$B/python-target" ./clients/python
PYTHONPATH="$B/python-target" $PY -c 'import stepcast, sys; sys.exit(stepcast.Client.__module__ != "stepcast.client")'
rm -rf clients/python/build clients/python/stepcast.egg-info
cd "$B/venv" # tests import the installed package, not the source tree
STEPCAST_BUILD="$OLDPWD/$B" bin/python "$OLDPWD/clients/python/tests/test_client.py"
