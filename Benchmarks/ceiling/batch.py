#!/usr/bin/env python3
"""The ceiling a PostgreSQL node cannot pass: PostgreSQL alone running the statements the store
sends for a batch of updates, from pgbench (a minimal C client), with nothing else on the way.

    psql -h 127.0.0.1 -p PORT -U islet -d DB -f Benchmarks/ceiling/setup.sql   # after `islet migrate`
    python3 Benchmarks/ceiling/batch.py 32 > /tmp/batch.sql
    pgbench -h 127.0.0.1 -p PORT -U islet -n -M prepared -c 1 -T 10 -f /tmp/batch.sql DB

Each transaction is what `PostgresWriter` sends for a batch of N content updates: BEGIN; per
change the activity read under its lock (with its phone state) and the upsert (no savepoint: a
change that writes once and ends sends it alone); the events lock; the events in one insert
that also notifies; COMMIT. Updates/s is transactions/s times N.

    python3 Benchmarks/ceiling/batch.py 4 --no-events-lock > /tmp/unlocked.sql

leaves the events lock out: with several clients (`-c 8`, as two nodes' lanes), what the lock
held through each COMMIT costs — every commit, and its wait for the disk, one after another.
"""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 32
events_lock = "--no-events-lock" not in sys.argv
lines = [f"-- {n} updates in one transaction, as the PostgreSQL store sends a batch"]
lines += [f"\\set a{i} random(1, 1000)" for i in range(n)]
lines.append("BEGIN ISOLATION LEVEL READ COMMITTED;")
for i in range(n):
    lines.append(f"SELECT a.body, p.* FROM activity a LEFT JOIN phoneActivity p ON p.activityId = a.id WHERE a.id = 'A' || :a{i} FOR UPDATE OF a SKIP LOCKED;")
    lines.append(
        "INSERT INTO activity (id, bundleId, deviceId, attributesType, state, key, deadline, relevanceScore, startTime, createdAt, updatedAt, body, channelId) "
        f"VALUES ('A' || :a{i}, 'com.bench', 'D1', 'Bench', 'active', NULL, 1e10, 0, :a{i}, :a{i}, extract(epoch from now()), "
        "repeat('{\"id\":\"A\",\"state\":\"active\",\"content\":{\"state\":{\"v\":2}}}', 6), NULL) "
        "ON CONFLICT (id) DO UPDATE SET state = excluded.state, deadline = excluded.deadline, relevanceScore = excluded.relevanceScore, "
        "startTime = excluded.startTime, updatedAt = excluded.updatedAt, body = excluded.body;"
    )
if events_lock:
    lines.append("SELECT pg_advisory_xact_lock(1);")
arrays = ", ".join([
    "array_fill(1::float8, ARRAY[%d])" % n, "array_fill('contentUpdated'::text, ARRAY[%d])" % n,
    "array_fill('com.bench'::text, ARRAY[%d])" % n, "array_fill('D1'::text, ARRAY[%d])" % n,
    "ARRAY[%s]::text[]" % ", ".join(f"'A' || :a{i}" for i in range(n)),
    "array_fill('{\"content\":{\"v\":2}}'::text, ARRAY[%d])" % n,
])
lines.append(
    "WITH written AS (INSERT INTO event (id, time, type, bundleId, deviceId, activityId, data) "
    "SELECT nextval('event_id'), time, type, bundleId, deviceId, NULLIF(activityId, ''), data "
    f"FROM unnest({arrays}) AS e(time, type, bundleId, deviceId, activityId, data) RETURNING id) "
    "SELECT MAX(id), pg_notify('islet_events', MAX(id)::text) FROM written;"
)
lines.append("COMMIT;")
print("\n".join(lines))
