#!/usr/bin/env python3
"""The upgrade fixtures' scenario (Tests/Upgrades/make-fixtures; docs/operations.md, "Upgrades").

Drives a running Islet of an earlier version through its REST API -- apps, devices, activities in
every state, their events, tokens, provider keys, channels, delivery credentials, deliveries in
the outbox, FCM -- as far as that version has them, then reads everything back with the same
version and writes the reads to expected.json: the paths, the key each needs, and the answers.
UpgradeTests replays those reads against the current code on the migrated data: every member of
every answer must still be there, equal.

  scenario.py URL ADMIN_KEY OUT.json
"""
import json
import sys
import time
import urllib.error
import urllib.request

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

url, admin, out = sys.argv[1], sys.argv[2], sys.argv[3]
# The replay's clock: before anything the scenario made, so no deadline, retry or lease is due.
started_at = time.time() - 1
BUNDLE = "com.example.upgrade"
# Deliveries to a port where nothing listens wait in the outbox, retried later.
NOWHERE = "https://127.0.0.1:9"
keys = {"admin": admin}
ran, skipped = [], []


def call(method, path, key="admin", body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + keys[key])
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            text = response.read().decode()
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, text


def must(method, path, key="admin", body=None):
    status, answer = call(method, path, key, body)
    if status >= 300:
        raise RuntimeError(f"{method} {path}: {status} {answer}")
    return answer


def step(name, action):
    """Runs one part of the scenario; a version without it (404, or a body it does not know) skips it."""
    try:
        action()
        ran.append(name)
    except RuntimeError as error:
        skipped.append(f"{name}: {error}")


def pem_key():
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


activities = {}


def start(name, device="default", **extra):
    body = {"attributesType": "Ride", "attributes": {"route": name}, "content": {"state": {"eta": 10}}, "device": device}
    body.update(extra)
    activities[name] = must("POST", "/v1/activities", "app", body)["id"]
    return activities[name]


def update(name, eta, **extra):
    must("POST", f"/v1/activities/{activities[name]}/update", "app", {"content": {"state": {"eta": eta}}, **extra})


def apps_and_devices():
    keys["app"] = must("POST", "/v1/apps", body={"bundleId": BUNDLE, "name": "Upgrade"})["apiKey"]
    must("POST", "/v1/devices", body={"id": "phone-2", "name": "Second phone"})


def activities_in_every_state():
    start("active")
    update("active", 8)
    update("active", 6, alert={"title": "Closer", "body": "6 minutes"})
    start("ended")
    update("ended", 4)
    must("POST", f"/v1/activities/{activities['ended']}/end", "app", {"content": {"state": {"eta": 0}}})
    start("dismissed", device="phone-2")
    must("POST", f"/v1/activities/{activities['dismissed']}/end", "app", {"dismissalPolicy": "immediate"})
    activities["by-key"] = must("PUT", "/v1/activities/by-key/order-7", "app",
                                {"attributesType": "Ride", "attributes": {"route": "key"}, "content": {"state": {"eta": 3}}})["id"]
    must("PUT", "/v1/activities/by-key/order-7", "app", {"attributesType": "Ride", "attributes": {"route": "key"}, "content": {"state": {"eta": 2}}})


def push_tokens_keys_and_channels():
    start("token", pushType="token")
    _, public = pem_key()
    must("POST", f"/v1/apps/{BUNDLE}/keys", "app", {"keyId": "KEY1234567", "teamId": "TEAM123456", "publicKey": public})
    must("POST", f"/v1/apps/{BUNDLE}/channels", "app", {"storagePolicy": 1})


def delivery_to_phones():
    private, _ = pem_key()
    must("PUT", f"/v1/apps/{BUNDLE}/delivery", body={
        "teamId": "TEAM123456", "keyId": "KEY7654321", "privateKey": private, "environment": "development", "url": NOWHERE,
    })
    must("PUT", "/v1/devices/phone-2/push-to-start-tokens/Ride", "app", {"token": "ab" * 32, "environment": "development"})
    start("delivered", device="phone-2")
    must("PUT", f"/v1/activities/{activities['delivered']}/push-token", "app", {"token": "cd" * 32, "device": "phone-2"})
    update("delivered", 7)


def android_phones():
    account = must("POST", "/v1/fcm/service-accounts", body={"projectId": "islet-upgrade"})
    must("PUT", f"/v1/apps/{BUNDLE}/fcm", body={"serviceAccount": account, "url": NOWHERE})
    must("POST", "/v1/devices", body={"id": "android-1", "name": "Pixel", "platform": "android"})
    must("PUT", "/v1/devices/android-1/fcm-token", "app", {"token": "fcm-" + "e" * 60})
    start("android", device="android-1")
    update("android", 5)


step("apps and devices", apps_and_devices)
step("activities in every state", activities_in_every_state)
step("push tokens, provider keys and channels", push_tokens_keys_and_channels)
step("delivery to phones", delivery_to_phones)
step("Android phones", android_phones)
# Let the sender try once, so deliveries have attempts and log lines.
time.sleep(2)

reads = []


def read(path, key):
    status, answer = call("GET", path, key)
    if status == 200:
        reads.append({"path": path, "key": key, "answer": answer})


for path in ["/v1/apps", f"/v1/apps/{BUNDLE}", "/v1/devices", "/v1/devices/phone-2", "/v1/devices/android-1",
             "/v1/devices/default/settings", f"/v1/apps/{BUNDLE}/keys", f"/v1/apps/{BUNDLE}/channels",
             f"/v1/apps/{BUNDLE}/delivery", f"/v1/apps/{BUNDLE}/fcm"]:
    read(path, "admin")
read("/v1/activities?state=active,stale,ended,dismissed&limit=100", "app")
for name, id in activities.items():
    read(f"/v1/activities/{id}", "app")
    read(f"/v1/activities/{id}/events", "app")
    read(f"/v1/activities/{id}/deliveries", "app")

with open(out, "w") as file:
    json.dump({"startedAt": started_at, "appKey": keys.get("app"), "activities": activities, "ran": ran, "skipped": skipped,
               "reads": reads}, file, indent=1, sort_keys=True)
print(f"ran: {', '.join(ran)}; {len(reads)} reads")
for line in skipped:
    print("skipped " + line)
