#!/usr/bin/env bash
# Screenshots of `islet demo bike` on the web display (start, middle with the island expanded,
# summary) as demo-bike-*.png, from a server of its own.
#
#   Examples/demo-screenshots.sh                    # into .build/screenshots (untracked)
#   Examples/demo-screenshots.sh docs/screenshots   # the committed ones
#   ISLET=/path/to/islet Examples/demo-screenshots.sh   # another islet (default: builds this one)
#
# Needs Python's selenium and a Chromium driver (Debian: chromium chromium-driver). Takes ~50 s.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Examples/serve.sh
islet_command
out=${1:-.build/screenshots}
work=$(mktemp -d)
mkdir -p "$out"

trap 'kill "${server:-}" 2>/dev/null; rm -rf "$work"' EXIT
start_islet "$work" || exit 1

python3 Examples/demo_screenshots.py "http://127.0.0.1:$port" "$work/data" "$out" "${islet[@]}"
for file in "$out"/demo-bike-*.png; do
    if command -v optipng >/dev/null; then optipng -quiet -o2 -strip all "$file"; fi
done
