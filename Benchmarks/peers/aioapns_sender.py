"""A plain Python APNs sender, for `islet-bench apns --aioapns`: the aioapns library from PyPI
(asyncio, HTTP/2 over TLS, a JWT it signs and reuses), pushing Live Activity updates as fast as
the server answers, with nothing durable behind it — what a backend written as a script sends.

Reads a JSON plan on standard input:
  {"host", "port", "ca", "key" (the .p8 key's PEM), "keyId", "teamId", "topic",
   "tokens": [...], "concurrency": 100, "connections": 1, "seconds": 10, "warmUp": 2}
Each of `concurrency` workers owns its share of the tokens (so each activity's timestamps
increase) and sends one push after another. Prints one JSON line: the pushes answered 200 per
second during `seconds` after `warmUp`, the other answers by status, and this process's CPU
seconds per second over the same span.
"""

import asyncio
import json
import os
import ssl
import sys
import time

from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsDevelopmentClientProtocol


async def main() -> None:
    plan = json.load(sys.stdin)
    APNsDevelopmentClientProtocol.APNS_SERVER = plan["host"]
    APNsDevelopmentClientProtocol.APNS_PORT = plan["port"]
    client = APNs(
        key=plan["key"], key_id=plan["keyId"], team_id=plan["teamId"], topic=plan["topic"], use_sandbox=True,
        max_connections=plan["connections"], ssl_context=ssl.create_default_context(cafile=plan["ca"]),
    )
    tokens = plan["tokens"]
    workers = plan["concurrency"]
    now = time.monotonic()
    start = now + plan["warmUp"]
    end = start + plan["seconds"]
    tallies = {}

    async def worker(lane: int) -> None:
        mine = tokens[lane::workers]
        sequence = 0
        while time.monotonic() < end:
            token = mine[sequence % len(mine)]
            sequence += 1
            payload = {"aps": {"event": "update", "timestamp": time.time(), "content-state": {"speed": sequence}}}
            try:
                result = await client.send_notification(NotificationRequest(
                    device_token=token, message=payload, push_type=PushType.LIVEACTIVITY, priority=5,
                ))
                outcome = str(result.status)
            except Exception as error:  # a lost connection, a timeout: counted, not fatal
                outcome = type(error).__name__
            finished = time.monotonic()
            if start <= finished < end:
                tallies[outcome] = tallies.get(outcome, 0) + 1

    async def measure_cpu() -> float:
        await asyncio.sleep(max(0.0, start - time.monotonic()))
        before = os.times()
        await asyncio.sleep(max(0.0, end - time.monotonic()))
        after = os.times()
        return (after.user + after.system - before.user - before.system) / plan["seconds"]

    cpu = asyncio.ensure_future(measure_cpu())
    await asyncio.gather(*(worker(lane) for lane in range(workers)))
    answered = tallies.pop("200", 0)
    print(json.dumps({"rate": answered / plan["seconds"], "others": tallies, "cpu": await cpu}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
