# Sourced by the screenshot scripts and Tests/Schemathesis/run.
#
# islet_command: sets the `islet` array to $ISLET when given, or else builds islet once and uses
# the binary (one `swift run` per call would check the build every time).
islet_command() {
    if [ -n "${ISLET:-}" ]; then
        read -r -a islet <<<"$ISLET"
    else
        # Said, since it can take a while: a first build, or waiting for another SwiftPM (a
        # running `swift test`) to let go of .build.
        echo "Building islet (swift build --product islet; set ISLET=path/to/islet to use another)…" >&2
        swift build --product islet >&2
        islet=("$(swift build --show-bin-path)/islet")
    fi
}

# start_islet DIRECTORY starts `islet serve` (the command in the `islet` array) on a free port
# with its data in DIRECTORY/data, its APNs endpoint off unless ISLET_APNS_ENABLED=true (then on
# a free port too), and sets `server` (its pid), `port` and `apns_port`; the caller stops it
# with `kill "$server"`.
start_islet() {
    local work=$1
    ISLET_APNS_ENABLED=${ISLET_APNS_ENABLED:-false} ISLET_APNS_PORT=0 \
        "${islet[@]}" serve --port 0 --data "$work/data" >"$work/serve.log" 2>&1 &
    server=$!
    port=
    for _ in $(seq 600); do
        port=$(sed -n 's|^Islet .* listening on http://[^:]*:\([0-9]*\)$|\1|p' "$work/serve.log")
        apns_port=$(sed -n 's|.*APNs-compatible endpoint listening on https://[^:]*:\([0-9]*\) .*|\1|p' "$work/serve.log")
        [ -n "$port" ] && return 0
        sleep 0.1
    done
    cat "$work/serve.log" >&2
    echo "islet serve did not start" >&2
    return 1
}
