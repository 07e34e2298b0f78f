#!/usr/bin/env bash
# Screenshots of `islet demo bike` on the web display (start, middle with the island expanded,
# summary) into docs/screenshots/demo-bike-*.png, from a server of its own.
#
#   Examples/demo-screenshots.sh                              # uses `swift run islet`
#   ISLET=.build/debug/islet Examples/demo-screenshots.sh     # a built islet, much faster
#
# Needs Python's selenium and a Chromium driver (Debian: chromium chromium-driver). Takes ~50 s.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
read -r -a islet <<<"${ISLET:-swift run islet}"
out=docs/screenshots
work=$(mktemp -d)
mkdir -p "$out"

source Examples/serve.sh
trap 'kill "${server:-}" 2>/dev/null; rm -rf "$work"' EXIT
start_islet "$work" || exit 1

python3 Examples/demo_screenshots.py "http://127.0.0.1:$port" "$work/data" "$out" "${islet[@]}"
for file in "$out"/demo-bike-*.png; do
    if command -v optipng >/dev/null; then optipng -quiet -o2 -strip all "$file"; fi
done
