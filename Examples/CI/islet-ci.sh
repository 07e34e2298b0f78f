#!/usr/bin/env bash
# A CI job as a Live Activity: runs the job's steps one after the other and shows the build on
# Islet's display — pending, then in progress step by step with an elapsed-time timer, then
# succeeded or failed — and exits as the job does (the first failing step's status).
#
#   Examples/CI/islet-ci.sh "Build=swift build" "Test=swift test"
#
# Every change is one `PUT /v1/activities/by-key/{key}` (start or update; the last one ends it):
# the key is stable for the CI run, so a re-run script or several jobs of one run update one
# activity. The type is the ci demo's, `IsletCIBuildAttributes` (Examples/Scenarios/CIBuild.swift),
# a name of Islet's own so that your app's types are never drawn with it; its layout,
# Examples/CI/layout.json (`islet demo ci --print-layout`), is registered first where the type has
# none, and a layout of it that is not this one is left as it is, with a note.
# Needs only curl and awk on the runner. Islet being unreachable never fails the job: it says so
# and runs on.
#
# Environment:
#   ISLET_URL          the server (default http://127.0.0.1:8080)
#   ISLET_KEY          an app's key (`islet apps create com.example.ci -q`), or the admin key with ISLET_APP
#   ISLET_APP          the app's bundle id, with the admin key
#   ISLET_DEVICE       the device to show it on (default: default)
#   ISLET_CI_KEY       the activity's key (default: ci-<the CI's run id>)
#   ISLET_CI_PIPELINE  the card's title (default: <directory> · <git branch>)
#   ISLET_CI_BUILD     the build's number (default: the CI's run number)
set -uo pipefail

if [ $# -eq 0 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 64
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
url=${ISLET_URL:-http://127.0.0.1:8080}
key=${ISLET_KEY:?set ISLET_KEY to an app\'s key, or to the admin key with ISLET_APP}
app=${ISLET_APP:-}
device=${ISLET_DEVICE:-default}
run_id=${GITHUB_RUN_ID:-${CI_PIPELINE_ID:-${BUILD_ID:-$(date +%s)}}}
activity_key=${ISLET_CI_KEY:-ci-$run_id}
pipeline=${ISLET_CI_PIPELINE:-$(basename "$PWD") · $(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo build)}
build=${ISLET_CI_BUILD:-#${GITHUB_RUN_NUMBER:-${CI_PIPELINE_IID:-${BUILD_NUMBER:-$run_id}}}}
swift_epoch=978307200 # Swift's Date counts seconds from 2001-01-01; the layout reads dates so
type=IsletCIBuildAttributes

# A JSON string.
quoted() {
    local text=${1//\\/\\\\}
    text=${text//\"/\\\"}
    text=${text//$'\t'/\\t}
    text=${text//$'\n'/\\n}
    printf '"%s"' "$text"
}

# call METHOD PATH BODY — sends it, says what went wrong (never fails the job).
call() {
    local answer status
    answer=$(curl -sS -X "$1" "$url$2" -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
        --data-binary "$3" -w '\n%{http_code}' 2>&1)
    status=${answer##*$'\n'}
    case $status in
        2??) ;;
        *) echo "islet-ci: $1 $2 → ${answer//$'\n'/ }" >&2 ;;
    esac
}

# show STATUS STEP DONE [END] — the build's state now, through PUT /v1/activities/by-key/{key}.
show() {
    local state end=""
    state="{\"status\": \"$1\", \"step\": $(quoted "$2"), \"done\": $3, \"steps\": ${#names[@]}"
    [ -n "${started:-}" ] && state+=", \"startedAt\": $started"
    [ -n "${4:-}" ] && state+=", \"elapsed\": $(($(date +%s) - started - swift_epoch))"
    state+="}"
    [ -n "${4:-}" ] && end=', "end": true, "dismissalPolicy": {"after": '$(($(date +%s) + 15 * 60))'}'
    call PUT "/v1/activities/by-key/$activity_key" "{\"attributesType\": \"$type\",${app:+ \"bundleId\": $(quoted "$app"),}
        \"device\": $(quoted "$device"), \"attributes\": {\"pipeline\": $(quoted "$pipeline"), \"buildId\": $(quoted "$build")},
        \"content\": {\"state\": $state}$end}"
}

names=() commands=()
for step in "$@"; do
    case $step in
        *=*) names+=("${step%%=*}") commands+=("${step#*=}") ;;
        *) echo "islet-ci: a step is NAME=COMMAND, not: $step" >&2; exit 64 ;;
    esac
done

layout_app=$app
if [ -z "$layout_app" ]; then
    # An app's key: its own bundle id, from GET /v1/apps.
    layout_app=$(curl -sS "$url/v1/apps" -H "Authorization: Bearer $key" 2>/dev/null | sed -n 's/.*"bundleId" *: *"\([^"]*\)".*/\1/p' | head -1)
fi
layout_path="/v1/apps/${layout_app:-unknown}/layouts/$type"

# compact FILE — a JSON file as JSONEncoder pretty-printed it (layout.json), written compactly as
# the server gives it back: each line without its indentation, a key's " : " as ":".
compact() {
    awk '{ sub(/^ +/, ""); if (match($0, /^"([^"\\]|\\.)*" : /)) $0 = substr($0, 1, RLENGTH - 3) ":" substr($0, RLENGTH + 1); printf "%s", $0 }' "$1"
}

# The layout: registered where the type has none; one already there is kept, this script's or not.
answer=$(curl -sS "$url$layout_path" -H "Authorization: Bearer $key" -w '\n%{http_code}' 2>&1)
case ${answer##*$'\n'} in
    404) call PUT "$layout_path" "$(cat "$here/layout.json")" ;;
    200)
        if [[ ${answer%$'\n'*} != *"\"layout\":$(compact "$here/layout.json"),\"revision\":"* ]]; then
            echo "islet-ci: $layout_app has a layout for $type that is not this script's; it is left as it is, and draws the build." \
                "To draw it with Examples/CI/layout.json instead: curl -X PUT $url$layout_path -H \"Authorization: Bearer \$ISLET_KEY\" -d @Examples/CI/layout.json" >&2
        fi
        ;;
    *) echo "islet-ci: GET $layout_path → ${answer//$'\n'/ }" >&2 ;;
esac

show pending "Waiting for a runner" 0
started=$(($(date +%s) - swift_epoch))
status=0
for index in "${!names[@]}"; do
    show inProgress "${names[$index]}" "$index"
    echo "islet-ci: ${names[$index]}: ${commands[$index]}"
    bash -c "${commands[$index]}"
    status=$?
    if [ $status -ne 0 ]; then
        show failed "${names[$index]}" "$index" end
        echo "islet-ci: ${names[$index]} failed ($status)" >&2
        exit $status
    fi
done
show succeeded "${names[-1]}" "${#names[@]}" end
