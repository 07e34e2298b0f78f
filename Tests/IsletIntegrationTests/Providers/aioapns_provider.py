"""An APNs provider written by someone else — the aioapns library from PyPI — sending Live
Activity pushes to Islet. Nothing in it is Islet-specific but the host, the port, and the
development CA it trusts.

Reads a JSON plan on standard input:
  {"host": "127.0.0.1", "port": 2197, "ca": ".../tls/ca.pem", "keyFile": "AuthKey_X.p8",
   "keyId": "X", "teamId": "T", "topic": "com.example.app.push-type.liveactivity",
   "pushes": [{"token": "…", "payload": {"aps": {…}}, "priority": 10}]}
and prints one JSON line per push: {"status", "description", "timestamp", "id"}.
"""

import asyncio
import json
import ssl
import sys

from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsDevelopmentClientProtocol


async def main() -> None:
    plan = json.load(sys.stdin)
    # The only change a provider makes to talk to Islet: where APNs is.
    APNsDevelopmentClientProtocol.APNS_SERVER = plan["host"]
    APNsDevelopmentClientProtocol.APNS_PORT = plan["port"]
    with open(plan["keyFile"]) as key:
        client = APNs(
            key=key.read(),
            key_id=plan["keyId"],
            team_id=plan["teamId"],
            topic=plan["topic"],
            use_sandbox=True,
            ssl_context=ssl.create_default_context(cafile=plan["ca"]),
        )
    for push in plan["pushes"]:
        result = await client.send_notification(
            NotificationRequest(
                device_token=push["token"],
                message=push["payload"],
                push_type=PushType.LIVEACTIVITY,
                priority=push.get("priority", 10),
            )
        )
        print(json.dumps({
            "status": str(result.status),
            "description": result.description,
            "timestamp": result.timestamp,
            "id": result.notification_id,
        }), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
