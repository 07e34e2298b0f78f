#!/usr/bin/env bash
# Screenshots of the example layouts: every scenario in every presentation (lockScreen, compact,
# minimal, expanded) and both appearances, plus a few other phases, and on every other surface
# (watch, carplay, mac, ipad, standby: docs/surfaces.md), drawn by `islet render`, with an index
# (index.md). The index's sections of the browser tests' screenshots (every place on the display,
# the console) are kept as they are.
#
#   Examples/Layouts/screenshots.sh                    # into .build/screenshots (untracked)
#   Examples/Layouts/screenshots.sh docs/screenshots   # the committed ones, for a change to show
#   ISLET=/path/to/islet Examples/Layouts/screenshots.sh   # another islet (default: builds this one)
#
# Needs a headless Chromium (chromium, chromium-browser or google-chrome on PATH, or
# ISLET_CHROMIUM). PNGs are optimized losslessly when optipng is installed.
#
# The sample files hold one fixed moment, 2026-11-21 10:00:00 UTC. Timers count from the time of
# drawing, so the dates in them are moved here by the time since that moment: a build finishes in
# 4:12, a ride has been going for 23:41 and the next drink is in 3:48, whenever this runs (give or
# take the seconds the screenshots take).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source Examples/serve.sh
islet_command
layouts=Examples/Layouts
out=${1:-.build/screenshots}
presentations=(lockScreen compact minimal expanded)
# The other surfaces, each at its default size (docs/surfaces.md).
surfaces=(surface:watch surface:carplay surface:mac surface:ipad surface:standby)
# view_appearances VIEW — light and dark, but for the watch and CarPlay, which are dark only.
view_appearances() { case $1 in surface:watch | surface:carplay) echo dark ;; *) echo light dark ;; esac; }

reference=1795255200 # 2026-11-21 10:00:00 UTC, the moment the sample files show
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# moved FILE SCALE KEY... — FILE (a path under $layouts) with the numbers of KEY moved to now,
# SCALE being 1 for dates in seconds and 1000 for milliseconds; prints the path of the copy.
moved() {
    local file=$1 scale=$2 copy
    shift 2
    copy="$work/$(echo "$file" | tr / -)"
    awk -v keys=" $* " -v delta="$((($(date +%s) - reference) * scale))" '
        match($0, /"[A-Za-z]+": *-?[0-9.]+/) {
            key = substr($0, RSTART + 1); key = substr(key, 1, index(key, "\"") - 1)
            if (index(keys, " " key " ")) {
                head = substr($0, 1, RSTART - 1); pair = substr($0, RSTART, RLENGTH); tail = substr($0, RSTART + RLENGTH)
                colon = index(pair, ":")
                $0 = head substr(pair, 1, colon) " " sprintf("%.0f", substr(pair, colon + 1) + delta) tail
            }
        }
        { print }' "$layouts/$file" >"$copy"
    echo "$copy"
}

# shoot NAME TYPE ATTRIBUTES STATE PRESENTATION APPEARANCE OUTPUT — PRESENTATION is one of the
# iPhone's, or surface:NAME for another surface.
shoot() {
    local what=(--presentation "$5")
    if [[ $5 == surface:* ]]; then what=(--surface "${5#surface:}"); fi
    "${islet[@]}" render --layout "@$layouts/$1/layout.json" --type "$2" --attributes "@$3" --state "@$4" \
        "${what[@]}" --appearance "$6" -o "$7"
    if command -v optipng >/dev/null; then optipng -quiet -o2 -strip all "$7"; fi
    echo "$7"
}

# files NAME [PHASE] — "TYPE ATTRIBUTES STATE" for a scenario (in a phase), with dates moved to now.
# Swift's Date (JSONEncoder) counts seconds; the Scripting app's timestamps count milliseconds.
files() {
    local dir=$layouts/$1
    case $1${2:+-$2} in
    bike-computer) echo "BikeAttributes $(moved bike-computer/attributes.json 1 startDate) $dir/state.json" ;;
    bike-computer-paused) echo "BikeAttributes $(moved bike-computer/attributes.json 1 startDate) $dir/state-paused.json" ;;
    ci-build) echo "StatusAttribute $dir/attributes.json $(moved ci-build/state.json 1 estimatedCompletionTime)" ;;
    ci-build-*) echo "StatusAttribute $dir/attributes.json $(moved "ci-build/state-$2.json" 1 estimatedCompletionTime)" ;;
    water-countdown) echo "MyLiveActivity $dir/attributes.json $(moved water-countdown/state.json 1000 startDate endDate)" ;;
    water-countdown-*) echo "MyLiveActivity $dir/attributes.json $dir/state-$2.json" ;;
    esac
}

scenarios=(bike-computer ci-build water-countdown)
# Other phases, for the conditionals: scenario, phase, presentation, appearances.
phases=(
    "ci-build failed lockScreen light,dark"
    "ci-build succeeded expanded dark"
    "bike-computer paused lockScreen light"
    "water-countdown done lockScreen light"
)

started=$SECONDS
for name in "${scenarios[@]}"; do
    for view in "${presentations[@]}" "${surfaces[@]}"; do
        for appearance in $(view_appearances "$view"); do
            read -r type attributes state <<<"$(files "$name")"
            shoot "$name" "$type" "$attributes" "$state" "$view" "$appearance" \
                "$out/$name-${view#surface:}-$appearance.png"
        done
    done
done
for variant in "${phases[@]}"; do
    read -r name phase presentation appearance_list <<<"$variant"
    for appearance in ${appearance_list//,/ }; do
        read -r type attributes state <<<"$(files "$name" "$phase")"
        shoot "$name" "$type" "$attributes" "$state" "$presentation" "$appearance" \
            "$out/$name-$phase-$presentation-$appearance.png"
    done
done

# The web display with all three live on it, from a server of its own (Selenium drives Chromium).
if python3 -c "import selenium" 2>/dev/null; then
    # `|| true`: under `set -e` a failing command in the EXIT trap (the server, stopped below, is
    # gone by then) would make the script exit 1 after every screenshot was made.
    trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
    start_islet "$work" || exit 1
    python3 "$layouts/display_screenshots.py" "http://127.0.0.1:$port" "$(cat "$work/data/admin.key")" "$out"
    kill "$server"
    wait "$server" 2>/dev/null || true
    for file in "$out"/display-*.png; do
        if command -v optipng >/dev/null; then optipng -quiet -o2 -strip all "$file"; fi
    done
else
    echo "skipping the display's screenshots: Python's selenium is not installed (pip install selenium)" >&2
fi

# The sections the browser tests' screenshots own (every place on the display, the console), from
# the index as it is: from the first of their headings to the presentations' table.
kept=$(awk '/^## Each presentation/ { exit } /^## (Every place|The console)/ { keep = 1 } keep' "$out/index.md" 2>/dev/null || true)

# table VIEW... — the index's table: a row per scenario, a column per view and appearance.
table() {
    local header="| scenario |" rule="|---|" view appearance name row file
    for view in "$@"; do
        for appearance in $(view_appearances "$view"); do header+=" ${view#surface:}, $appearance |" rule+="---|"; done
    done
    echo "$header"
    echo "$rule"
    for name in "${scenarios[@]}"; do
        row="| \`$name\` |"
        for view in "$@"; do
            for appearance in $(view_appearances "$view"); do
                file=$name-${view#surface:}-$appearance.png
                row+=" [![$name ${view#surface:} $appearance]($file)]($file) |"
            done
        done
        echo "$row"
    done
}

# The index.
{
    echo "# Screenshots"
    echo
    echo "The layouts in [\`Examples/Layouts/\`](../../Examples/Layouts/) drawn by \`islet render\`, made by"
    echo "\`Examples/Layouts/screenshots.sh\`. The Dynamic Island is always dark; the appearance changes"
    echo "the Lock Screen card and the wallpaper."
    echo
    echo "## The web display"
    echo
    echo "All three live on the display at \`/\` (\`islet serve\`): the Lock Screen in relevance order, the"
    echo "island in its minimal pair (the most relevant attached, the next in a bubble), and expanded."
    echo
    echo "| light | dark | expanded |"
    echo "|---|---|---|"
    echo "| ![display, light](display-light.png) | ![display, dark](display-dark.png) | ![display, island expanded](display-expanded-dark.png) |"
    echo
    if [ -n "$kept" ]; then
        echo "$kept"
        echo
    fi
    echo "## Each presentation"
    echo
    table "${presentations[@]}"
    echo
    echo "## Every other surface"
    echo
    echo "\`islet render --surface\` at each surface's default size (the watch 49 mm, CarPlay 240 × 78, the"
    echo "iPad 500 wide, StandBy 852 × 393): the watch and CarPlay draw the layout's \`small\` region, the"
    echo "Mac the compact view in its menu bar with the expanded one open under it."
    echo
    table "${surfaces[@]}"
    echo
    echo "## Other phases"
    echo
    echo "| scenario | phase | presentation | appearance | screenshot |"
    echo "|---|---|---|---|---|"
    for variant in "${phases[@]}"; do
        read -r name phase presentation appearance_list <<<"$variant"
        for appearance in ${appearance_list//,/ }; do
            file=$name-$phase-$presentation-$appearance.png
            echo "| \`$name\` | $phase | $presentation | $appearance | [![$name $phase]($file)]($file) |"
        done
    done
} >"$out/index.md"
echo "$out/index.md"
echo "screenshots in $out" >&2
echo "done in $((SECONDS - started)) s" >&2
