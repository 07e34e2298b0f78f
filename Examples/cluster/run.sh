#!/usr/bin/env bash
# Several Islet nodes on one PostgreSQL, behind nginx, on this machine (docs/cluster.md):
#
#   Examples/cluster/run.sh            # PostgreSQL, `islet migrate`, 3 nodes, nginx on a free port
#   ISLET=.build/debug/islet NODES=2 PORT=9000 Examples/cluster/run.sh
#
# Ports are free ones beside whatever already runs (the README's servers on 8080 and 8081): nginx
# takes the first free one from 8080 (or PORT), PostgreSQL the first from 55432 (or PG_PORT),
# each node one the system gives it. nginx's address is printed and written to
# .islet-cluster/url. ISLET names the islet binary to run (it is not built then); without it,
# islet is built first. Needs Debian's postgresql and nginx packages (sudo apt-get install
# postgresql nginx-light). Everything lives in ./.islet-cluster, or the directory DATA names (the
# database, each node's data directory, the logs, the admin key every node shares); run it again
# and it starts on the same data. Ctrl-C (or SIGTERM) stops it all.
set -euo pipefail
cd "$(dirname "$0")/../.."
source Examples/serve.sh

# free_port FROM — the first port from FROM on which nothing on this machine answers.
free_port() {
  local port=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
  echo "$port"
}

nodes=${NODES:-3}
port=${PORT:-$(free_port 8080)}
pg_port=${PG_PORT:-$(free_port 55432)}
work=${DATA:-.islet-cluster}
mkdir -p "$work"
work=$(cd "$work" && pwd)
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$pg_bin" ] || { echo "PostgreSQL is not installed: sudo apt-get install postgresql" >&2; exit 1; }
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "nginx is not installed: sudo apt-get install nginx-light" >&2; exit 1; }
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

# PostgreSQL refuses to run as root: as root, its programs run as the postgres user.
as_postgres=()
if [ "$(id -u)" -eq 0 ]; then
  as_postgres=(runuser -u postgres --)
  chown postgres "$work"
fi

# 1. The database: a cluster of its own in .islet-cluster/pg, on loopback.
if [ ! -f "$work/pg/PG_VERSION" ]; then
  "${as_postgres[@]}" "$pg_bin/initdb" -D "$work/pg" -A trust -U islet -E UTF8 >"$work/initdb.log"
fi
# A free port can be taken between the look and the start (another PostgreSQL starting beside
# this one): then the next free one, three times at most; a port given in PG_PORT is kept.
started=
for attempt in 1 2 3; do
  if "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/postgres.log" -w \
    -o "-p $pg_port -k $work -c listen_addresses=127.0.0.1" start >/dev/null; then
    started=1
    break
  fi
  [ -z "${PG_PORT:-}" ] || break
  sleep 1
  pg_port=$(free_port $((pg_port + 1)))
done
if [ -z "$started" ]; then
  echo "PostgreSQL did not start; the end of $work/postgres.log:" >&2
  tail -n 15 "$work/postgres.log" >&2 || true
  exit 1
fi
store="postgres://islet@127.0.0.1:$pg_port/postgres"
pids=()
stop() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -m fast -w stop >/dev/null || true
}
trap stop EXIT
trap 'exit 0' INT TERM

# 2. The schema (each node would also migrate as it starts; this does it once, first).
islet_command
"${islet[@]}" migrate --store "$store"

# 3. The nodes: one admin key for all, a data directory and a free port each. Behind a proxy
# every request arrives from loopback, so keyless access is off: the display and the console
# through nginx need a key, as on a server that listens beyond loopback (README, "Running it").
[ -f "$work/admin.key" ] || (umask 077; head -c 32 /dev/urandom | base64 | tr -d '/+=' >"$work/admin.key")
export ISLET_SERVER_ADMIN_KEY=$(cat "$work/admin.key") ISLET_STORE=$store ISLET_APNS_ENABLED=false \
  ISLET_SERVER_KEYLESS_LOOPBACK=false
for n in $(seq 1 "$nodes"); do
  "${islet[@]}" serve --port 0 --data "$work/node$n" >"$work/node$n.log" 2>&1 &
  pids+=($!)
done
node_ports=()
upstreams=""
for n in $(seq 1 "$nodes"); do
  node_port=
  for _ in $(seq 300); do
    node_port=$(sed -n 's|^Islet .* listening on http://[^:]*:\([0-9]*\)$|\1|p' "$work/node$n.log")
    [ -n "$node_port" ] && break
    kill -0 "${pids[$((n - 1))]}" 2>/dev/null || { cat "$work/node$n.log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$node_port" ] || { cat "$work/node$n.log" >&2; echo "node $n did not start" >&2; exit 1; }
  node_ports+=("$node_port")
  upstreams+="    server 127.0.0.1:$node_port;"$'\n'
done

# 4. nginx in front: any node takes any request; event streams pass unbuffered.
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx-body;
  proxy_temp_path $work/nginx-proxy;
  fastcgi_temp_path $work/nginx-fastcgi;
  uwsgi_temp_path $work/nginx-uwsgi;
  scgi_temp_path $work/nginx-scgi;
  upstream islet {
$upstreams    keepalive 32;
  }
  map \$http_upgrade \$connection_upgrade { default upgrade; '' ''; }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://islet;
      proxy_http_version 1.1;
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection \$connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_next_upstream error timeout http_503;
    }
  }
}
CONF
"$nginx_bin" -c "$work/nginx.conf" -g 'daemon off;' &
nginx=$!
pids+=("$nginx")
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$nginx" 2>/dev/null || { echo "nginx did not start: $work/nginx-error.log" >&2; exit 1; }
  sleep 0.1
done

echo "http://127.0.0.1:$port" >"$work/url"
cat <<TEXT
$nodes Islet nodes on $store, behind nginx on http://127.0.0.1:$port
  admin key: $work/admin.key (export ISLET_URL=\$(cat $work/url) ISLET_KEY=\$(cat $work/admin.key))
  console:   http://127.0.0.1:$port/console#key=<the admin key> (behind nginx the console and the display need a key)
  nodes:     $(printf ':%s ' "${node_ports[@]}")(logs in $work/node*.log)
  stop with Ctrl-C
TEXT
wait
