#!/usr/bin/env bash
# Several Islet nodes on one PostgreSQL, behind nginx, on this machine (docs/cluster.md):
#
#   Examples/cluster/run.sh            # PostgreSQL, `islet migrate`, 3 nodes, nginx on :8080
#   NODES=2 PORT=9000 Examples/cluster/run.sh
#
# Needs Debian's postgresql and nginx packages (sudo apt-get install postgresql nginx-light).
# Everything lives in ./.islet-cluster (the database, each node's data directory, the logs, the
# admin key every node shares); run it again and it starts on the same data. Ctrl-C stops it all.
set -euo pipefail
cd "$(dirname "$0")/../.."

nodes=${NODES:-3}
port=${PORT:-8080}
pg_port=${PG_PORT:-55432}
work=$PWD/.islet-cluster
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$pg_bin" ] || { echo "PostgreSQL is not installed: sudo apt-get install postgresql" >&2; exit 1; }
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "nginx is not installed: sudo apt-get install nginx-light" >&2; exit 1; }
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
mkdir -p "$work"

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
"${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/postgres.log" -w \
  -o "-p $pg_port -k $work -c listen_addresses=127.0.0.1" start >/dev/null
store="postgres://islet@127.0.0.1:$pg_port/postgres"

# 2. The schema (each node would also migrate as it starts; this does it once, first).
swift build --product islet >&2
islet=$(swift build --show-bin-path)/islet
"$islet" migrate --store "$store"

# 3. The nodes: one admin key for all, a data directory each, ports after nginx's.
[ -f "$work/admin.key" ] || (umask 077; head -c 32 /dev/urandom | base64 | tr -d '/+=' >"$work/admin.key")
export ISLET_SERVER_ADMIN_KEY=$(cat "$work/admin.key") ISLET_STORE=$store ISLET_APNS_ENABLED=false
pids=()
upstreams=""
for n in $(seq 1 "$nodes"); do
  node_port=$((port + n))
  "$islet" serve --port "$node_port" --data "$work/node$n" >"$work/node$n.log" 2>&1 &
  pids+=($!)
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
pids+=($!)

stop() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$work/pg" -m fast -w stop >/dev/null || true
}
trap stop EXIT
trap 'exit 0' INT TERM

for n in $(seq 1 "$nodes"); do
  for _ in $(seq 300); do
    grep -q "listening on http" "$work/node$n.log" && break
    kill -0 "${pids[$((n - 1))]}" 2>/dev/null || { cat "$work/node$n.log" >&2; exit 1; }
    sleep 0.1
  done
done
cat <<TEXT
$nodes Islet nodes on $store, behind nginx on http://127.0.0.1:$port
  admin key: $work/admin.key (export ISLET_KEY=\$(cat $work/admin.key) ISLET_URL=http://127.0.0.1:$port)
  nodes:     $(seq -s ' ' $((port + 1)) $((port + nodes)) | sed 's/\([0-9]*\)/:\1/g'), logs in $work/node*.log
  stop with Ctrl-C
TEXT
wait
