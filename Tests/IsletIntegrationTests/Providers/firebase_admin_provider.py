"""Sends FCM messages with Google's own client, firebase-admin (PyPI), unchanged but for the two
things every provider tested here changes: FCM's address (a constant of the library) and the
authority it trusts (requests reads REQUESTS_CA_BUNDLE).

Reads a plan from standard input:
  {"push": "https://127.0.0.1:PORT", "ca": "ca.pem", "serviceAccount": {...},
   "messages": [{"fid": "..."} or {"token": "..."}, with "islet": "<data.islet text>"]}
and prints one JSON line per message: {"name": ...} when FCM took it, or {"error": the
firebase-admin exception's class name, "code": its code, "message": ...}.
"""

import json
import os
import sys
import tempfile
import warnings

plan = json.load(sys.stdin)
os.environ["REQUESTS_CA_BUNDLE"] = plan["ca"]

import firebase_admin  # noqa: E402
from firebase_admin import credentials, exceptions, messaging  # noqa: E402

messaging._MessagingService.FCM_URL = plan["push"] + "/v1/projects/{0}/messages:send"
path = os.path.join(tempfile.mkdtemp(), "service-account.json")
with open(path, "w") as file:
    json.dump(plan["serviceAccount"], file)
firebase_admin.initialize_app(credentials.Certificate(path))

for entry in plan["messages"]:
    with warnings.catch_warnings():
        # `token` is deprecated for `fid` in firebase-admin 7.x: sending to one still works.
        warnings.simplefilter("ignore", DeprecationWarning)
        message = messaging.Message(
            fid=entry.get("fid"), token=entry.get("token"), data={"islet": entry["islet"]},
            android=messaging.AndroidConfig(priority="high", collapse_key=entry.get("collapseKey", "ride")))
    try:
        print(json.dumps({"name": messaging.send(message)}), flush=True)
    except exceptions.FirebaseError as error:
        print(json.dumps({"error": type(error).__name__, "code": error.code, "message": str(error)}), flush=True)
