#!/usr/bin/env bash
# Screenshots of every `islet demo` on the web display — light, dark, the island expanded and
# minimal — and of the bike ride from start to summary, as demo-*.png, from a server of its own.
#
#   Examples/demo-screenshots.sh                    # into .build/screenshots (untracked)
#   Examples/demo-screenshots.sh docs/screenshots   # the committed ones
#   ISLET=/path/to/islet Examples/demo-screenshots.sh   # another islet (default: builds this one)
#
# Needs Python's selenium and a Chromium driver (Debian: chromium chromium-driver). Takes ~3 minutes.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source Examples/serve.sh
islet_command
out=${1:-.build/screenshots}
work=$(mktemp -d)
mkdir -p "$out"

trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
ISLET_APNS_ENABLED=true start_islet "$work" || exit 1
# The APNs endpoint says where it listens just after the REST API does.
for _ in $(seq 50); do
    [ -n "$apns_port" ] && break
    sleep 0.1
    apns_port=$(sed -n 's|.*APNs-compatible endpoint listening on https://[^:]*:\([0-9]*\) .*|\1|p' "$work/serve.log")
done

python3 Examples/demo_screenshots.py "http://127.0.0.1:$port" "https://127.0.0.1:$apns_port" "$work/data" "$out" "${islet[@]}"
for file in "$out"/demo-*.png; do
    if command -v optipng >/dev/null; then optipng -quiet -o2 -strip all "$file"; fi
done

# The page: a row per demo, a column per presentation.
{
    echo "# The demos"
    echo
    echo "Each \`islet demo\` on the web display, made by \`Examples/demo-screenshots.sh\`: the Lock Screen"
    echo "with the island compact (light and dark), the island expanded, and the island minimal beside"
    echo "another activity."
    echo
    echo "| demo | light | dark | expanded | minimal |"
    echo "|---|---|---|---|---|"
    for demo in bike ci water delivery; do
        row="| \`$demo\` |"
        for shot in light dark expanded minimal; do row+=" <img src=\"demo-$demo-$shot.png\" width=\"150\"> |"; done
        echo "$row"
    done
    echo
    echo "The ride from its start to its summary:"
    echo
    echo "<img src=\"demo-bike-1-riding.png\" width=\"200\"> <img src=\"demo-bike-2-expanded-dark.png\" width=\"200\"> <img src=\"demo-bike-3-summary.png\" width=\"200\">"
} >"$out/demos.md"
echo "$out/demos.md"
