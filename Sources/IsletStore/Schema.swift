import GRDB
import IsletCore

/// The store's schema, as versioned migrations: a migration, once released, never changes.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: apps, keys, devices, activities, events") { db in
            try db.create(table: "app") { table in
                table.primaryKey("bundleId", .text)
                table.column("name", .text).notNull()
                table.column("createdAt", .double).notNull()
            }
            try db.create(table: "apiKey") { table in
                table.primaryKey("hash", .text)
                // NULL for the admin key.
                table.column("bundleId", .text).references("app", onDelete: .cascade)
                table.column("createdAt", .double).notNull()
            }
            try db.create(table: "device") { table in
                table.primaryKey("id", .text)
                table.column("name", .text).notNull()
                table.column("createdAt", .double).notNull()
            }
            try db.create(table: "appSettings") { table in
                table.column("deviceId", .text).notNull().references("device", onDelete: .cascade)
                table.column("bundleId", .text).notNull().references("app", onDelete: .cascade)
                table.column("activitiesEnabled", .boolean).notNull()
                table.column("frequentUpdates", .boolean).notNull()
                table.primaryKey(["deviceId", "bundleId"])
            }
            // The activity itself is kept whole as JSON in `body`; the other columns are copies
            // of its fields that queries filter on. `deadline` is the next moment the rules act
            // on it by themselves, so a restart resumes every timer from the data.
            try db.create(table: "activity") { table in
                table.primaryKey("id", .text)
                table.column("bundleId", .text).notNull().references("app")
                table.column("deviceId", .text).notNull().references("device")
                table.column("attributesType", .text).notNull()
                table.column("state", .text).notNull()
                table.column("key", .text)
                table.column("deadline", .double)
                // Listing order, as Activity.relevanceOrder: score descending, earliest start first.
                table.column("relevanceScore", .double).notNull()
                table.column("startTime", .double).notNull()
                table.column("createdAt", .double).notNull()
                table.column("updatedAt", .double).notNull()
                table.column("body", .text).notNull()
            }
            try db.create(index: "activity_deadline", on: "activity", columns: ["deadline"], condition: Column("deadline") != nil)
            try db.create(index: "activity_device_state", on: "activity", columns: ["deviceId", "state"])
            try db.create(index: "activity_app_state", on: "activity", columns: ["bundleId", "state"])
            try db.create(index: "activity_key", on: "activity", columns: ["bundleId", "key"], condition: Column("key") != nil)
            try db.create(table: "event") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("time", .double).notNull()
                table.column("type", .text).notNull()
                table.column("bundleId", .text).notNull()
                table.column("deviceId", .text).notNull()
                table.column("activityId", .text)
                table.column("data", .text).notNull()
            }
            try db.create(index: "event_activity", on: "event", columns: ["activityId", "id"])
            try db.create(index: "event_time", on: "event", columns: ["time"])
        }
        migrator.registerMigration("v2: push tokens, provider keys, activity types, channels") { db in
            try db.alter(table: "app") { table in
                // Strict pushes: what a device would drop silently is refused with 400 instead.
                table.add(column: "strictPushes", .boolean).notNull().defaults(to: false)
            }
            // Every push token ever issued, so a retired one answers 410 rather than BadDeviceToken.
            try db.create(table: "pushToken") { table in
                table.primaryKey("token", .text)
                table.column("kind", .text).notNull()  // activity | pushToStart
                table.column("activityId", .text)
                table.column("deviceId", .text).notNull()
                table.column("bundleId", .text).notNull()
                table.column("createdAt", .double).notNull()
                table.column("retiredAt", .double)
                table.column("retiredReason", .text)  // rotated | activityDismissed
            }
            try db.create(
                index: "pushToken_current", on: "pushToken", columns: ["kind", "deviceId", "bundleId", "activityId"],
                condition: Column("retiredAt") == nil
            )
            try db.execute(sql: """
                INSERT INTO pushToken (token, kind, activityId, deviceId, bundleId, createdAt)
                SELECT json_extract(body, '$.pushToken'), 'activity', id, deviceId, bundleId, createdAt
                FROM activity WHERE json_extract(body, '$.pushToken') IS NOT NULL
                """)
            try db.create(table: "providerKey") { table in
                table.column("keyId", .text).notNull()
                table.column("teamId", .text).notNull()
                table.column("bundleId", .text).notNull().references("app", onDelete: .cascade)
                table.column("publicKey", .text).notNull()  // PEM; a private key is never kept
                table.column("createdAt", .double).notNull()
                table.primaryKey(["keyId", "bundleId"])
            }
            try db.create(table: "activityType") { table in
                table.column("bundleId", .text).notNull().references("app", onDelete: .cascade)
                table.column("name", .text).notNull()
                table.column("body", .text).notNull()
                table.primaryKey(["bundleId", "name"])
            }
            try db.create(table: "channel") { table in
                table.primaryKey("id", .text)
                table.column("bundleId", .text).notNull().references("app", onDelete: .cascade)
                table.column("storagePolicy", .integer).notNull()
                table.column("createdAt", .double).notNull()
                // The most recent message, for storage policy 1: the payload and when it came.
                table.column("message", .text)
                table.column("messageAt", .double)
            }
            try db.create(index: "channel_app", on: "channel", columns: ["bundleId"])
            try db.alter(table: "activity") { table in
                table.add(column: "channelId", .text)
            }
            try db.execute(sql: """
                UPDATE activity SET channelId = json_extract(body, '$.pushType.channel')
                WHERE json_extract(body, '$.pushType.channel') IS NOT NULL
                """)
            try db.create(index: "activity_channel", on: "activity", columns: ["channelId"], condition: Column("channelId") != nil)
            // Every device holds a push-to-start token for every app.
            try db.execute(sql: """
                INSERT INTO pushToken (token, kind, deviceId, bundleId, createdAt)
                SELECT lower(hex(randomblob(32))), 'pushToStart', device.id, app.bundleId, app.createdAt
                FROM app CROSS JOIN device
                """)
        }
        migrator.registerMigration("v3: a channel's stored message expires as its apns-expiration says") { db in
            try db.alter(table: "channel") { table in
                table.add(column: "messageExpiresAt", .double)
            }
            try db.execute(sql: "UPDATE channel SET messageExpiresAt = messageAt + 8 * 3600 WHERE message IS NOT NULL")
        }
        migrator.registerMigration("v4: layouts per app and activity type") { db in
            try db.create(table: "layout") { table in
                table.column("bundleId", .text).notNull().references("app", onDelete: .cascade)
                table.column("attributesType", .text).notNull()
                table.column("body", .text).notNull()  // the document as registered
                table.column("revision", .integer).notNull()
                table.column("updatedAt", .double).notNull()
                table.primaryKey(["bundleId", "attributesType"])
            }
        }
        migrator.registerMigration("v5: device keys, for displays") { db in
            try db.alter(table: "apiKey") { table in
                // Set for a device's key (bundleId is then NULL too); at most one key per device.
                table.add(column: "deviceId", .text).references("device", onDelete: .cascade)
            }
            try db.create(index: "apiKey_deviceId", on: "apiKey", columns: ["deviceId"], unique: true)
        }
        migrator.registerMigration("v6: live activities counted per device and app from one index") { db in
            // Starting an activity counts the app's live ones on the device. With (deviceId, state)
            // and (bundleId, state) alone SQLite picked the app's index and counted every live
            // activity of the app: a start cost grew with the app's whole fleet (100,000
            // activities over 1,000 devices took minutes to create).
            try db.drop(index: "activity_device_state")
            try db.create(index: "activity_device_app_state", on: "activity", columns: ["deviceId", "bundleId", "state"])
        }
        migrator.registerMigration("v7: a row for the health check's probe write") { db in
            // After writes failed (a full disk), /healthz writes here to learn whether they work again.
            try db.create(table: "writeProbe") { table in
                table.column("id", .integer).primaryKey()
                table.column("at", .double).notNull()
                table.column("pad", .blob)
            }
        }
        migrator.registerMigration("v8: delivery to real phones: credentials, phones' tokens, the outbox") { db in
            // An app's Apple credentials per environment; the private key never leaves the store
            // but to sign (the database file is created readable by the server's user only).
            try db.create(table: "deliveryCredential") { table in
                table.column("bundleId", .text).notNull().references("app", onDelete: .cascade)
                table.column("environment", .text).notNull()  // development | production
                table.column("teamId", .text).notNull()
                table.column("keyId", .text).notNull()
                table.column("privateKey", .text).notNull()
                table.column("url", .text)
                table.column("caCertificate", .text)
                table.column("createdAt", .double).notNull()
                table.column("failure", .text)  // Apple refused its provider token
                table.primaryKey(["bundleId", "environment"])
            }
            // Tokens real phones reported: push-to-start per app and type, update per activity.
            try db.create(table: "phoneToken") { table in
                table.primaryKey("token", .text)
                table.column("kind", .text).notNull()  // pushToStart | update
                table.column("bundleId", .text).notNull()
                table.column("deviceId", .text).notNull()
                table.column("attributesType", .text)
                table.column("activityId", .text)
                table.column("environment", .text).notNull()
                table.column("createdAt", .double).notNull()
                table.column("retiredAt", .double)
                table.column("retiredReason", .text)
                table.column("appleTimestamp", .double)  // a 410's "invalid since"
                table.column("lastAt", .double)
                table.column("lastStatus", .integer)
                table.column("lastReason", .text)
            }
            try db.create(
                index: "phoneToken_pushToStart", on: "phoneToken", columns: ["deviceId", "bundleId", "attributesType"],
                condition: Column("kind") == "pushToStart" && Column("retiredAt") == nil
            )
            try db.create(
                index: "phoneToken_update", on: "phoneToken", columns: ["activityId"],
                condition: Column("kind") == "update" && Column("retiredAt") == nil
            )
            try db.create(index: "phoneToken_device", on: "phoneToken", columns: ["deviceId"])
            // Activities delivered to a phone: the environment, the budget spent, the state.
            try db.create(table: "phoneActivity") { table in
                table.primaryKey("activityId", .text)
                table.column("bundleId", .text).notNull()
                table.column("deviceId", .text).notNull()
                table.column("environment", .text).notNull()
                table.column("channelId", .text)
                table.column("state", .text).notNull()  // active | tokenRetired
                table.column("budgeted", .text).notNull()  // priority-10 sends of the last hour, Unix seconds
            }
            // The outbox: one row per APNs request to make, written with the change.
            try db.create(table: "delivery") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("orderKey", .text).notNull()  // activity:<id> or channel:<id>
                table.column("activityId", .text)
                table.column("bundleId", .text).notNull()
                table.column("deviceId", .text)
                table.column("channelId", .text)
                table.column("event", .text).notNull()
                table.column("payload", .text).notNull()
                table.column("alert", .boolean).notNull()
                table.column("expiration", .double)
                table.column("state", .text).notNull()
                table.column("attempts", .integer).notNull()
                table.column("nextAttemptAt", .double).notNull()
                table.column("leaseUntil", .double)
                table.column("createdAt", .double).notNull()
                table.column("finishedAt", .double)
                table.column("apnsId", .text).notNull()
            }
            try db.create(
                index: "delivery_unfinished", on: "delivery", columns: ["orderKey", "id"],
                condition: ["pending", "sending", "held"].contains(Column("state"))
            )
            try db.create(
                index: "delivery_due", on: "delivery", columns: ["state", "nextAttemptAt"],
                condition: ["pending", "sending"].contains(Column("state"))
            )
        }
        migrator.registerMigration("v9: channels made at Apple, in an environment") { db in
            try db.alter(table: "channel") { table in
                table.add(column: "environment", .text)  // development | production; NULL: Islet's own
            }
        }
        migrator.registerMigration("v10: an activity's events chained, not indexed") { db in
            // Each change inserted into `event_activity` at a random place: a page of the log per
            // change, the largest cost SQLite had left (BENCHMARKS.md, issue 17). An event names
            // its activity's previous one instead, and the activity keeps the last.
            try db.alter(table: "event") { table in
                table.add(column: "previous", .integer)
            }
            try db.alter(table: "activity") { table in
                table.add(column: "lastEventId", .integer)
            }
            try db.execute(sql: """
                UPDATE event SET previous = (
                    SELECT MAX(earlier.id) FROM event AS earlier
                    WHERE earlier.activityId = event.activityId AND earlier.id < event.id
                ) WHERE activityId IS NOT NULL
                """)
            try db.execute(sql: "UPDATE activity SET lastEventId = (SELECT MAX(id) FROM event WHERE event.activityId = activity.id)")
            try db.drop(index: "event_activity")
        }
        migrator.registerMigration("v11: activities listed page by page in relevance order") { db in
            // The listing's order as one row value, `(listingScore, startTime, id)`, so a page
            // seeks to where the previous ended instead of counting from the start. SQLite seeks
            // a row value on columns only, not on `-relevanceScore`: hence a generated column
            // (virtual: computed when read, stored in the indexes alone). An app key's listing,
            // and the console's, has an index of its own. A change of content alone sets none of
            // these columns (`ChangeStatements.saveContent`), so it rewrites no index.
            try db.execute(sql: "ALTER TABLE activity ADD COLUMN listingScore REAL GENERATED ALWAYS AS (-relevanceScore) VIRTUAL")
            try db.execute(sql: "CREATE INDEX activity_listing ON activity (listingScore, startTime, id)")
            try db.execute(sql: "CREATE INDEX activity_app_listing ON activity (bundleId, listingScore, startTime, id)")
        }
        migrator.registerMigration("v12: an app's delivery paused") { db in
            try db.alter(table: "app") { table in
                table.add(column: "deliveryPaused", .boolean).notNull().defaults(to: false)
            }
        }
        migrator.registerMigration("v13: finished deliveries and an activity's phone tokens found for the purge") { db in
            // The outbox is bounded: retention deletes finished deliveries oldest first, and with
            // a dismissed activity its phone tokens (`purge`). Unfinished rows are not indexed here.
            try db.execute(sql: "CREATE INDEX delivery_finished ON delivery (finishedAt) WHERE finishedAt IS NOT NULL")
            try db.execute(sql: "CREATE INDEX phoneToken_activity ON phoneToken (activityId) WHERE activityId IS NOT NULL")
        }
        migrator.registerMigration("v14: Android phones, FCM credentials, and Islet playing Google") { db in
            // docs/android.md. A device is an iPhone or an Android phone; an Android phone holds
            // an FCM registration token per app (a `pushToken` of kind `fcm`).
            try db.execute(sql: "ALTER TABLE device ADD COLUMN platform TEXT NOT NULL DEFAULT 'ios'")
            // An activity delivered to a real phone goes through APNs or FCM.
            try db.execute(sql: "ALTER TABLE phoneActivity ADD COLUMN platform TEXT NOT NULL DEFAULT 'ios'")
            // An app's FCM service account: its JSON as Google issues it, private key included;
            // like the .p8 key it leaves the store only to sign.
            try db.create(table: "fcmCredential") { table in
                table.primaryKey("bundleId", .text).references("app", onDelete: .cascade)
                table.column("projectId", .text).notNull()
                table.column("clientEmail", .text).notNull()
                table.column("privateKeyId", .text).notNull()
                table.column("tokenUri", .text).notNull()
                table.column("serviceAccount", .text).notNull()
                table.column("url", .text)
                table.column("caCertificate", .text)
                table.column("createdAt", .double).notNull()
                table.column("failure", .text)  // FCM refused its access token twice
            }
            // A real Android phone's registration token for an app: a `phoneToken` of kind `fcm`.
            try db.execute(sql: "CREATE INDEX phoneToken_fcm ON phoneToken (deviceId, bundleId) WHERE kind = 'fcm' AND retiredAt IS NULL")
            // Islet playing Google: the service accounts it issued (their public keys only), the
            // access tokens it gave out (hashed), and what each Android phone was last sent.
            try db.create(table: "fcmServiceAccount") { table in
                table.primaryKey("clientEmail", .text)
                table.column("projectId", .text).notNull()
                table.column("privateKeyId", .text).notNull()
                table.column("publicKey", .text).notNull()
                table.column("createdAt", .double).notNull()
            }
            try db.create(table: "fcmAccessToken") { table in
                table.primaryKey("hash", .text)
                table.column("clientEmail", .text).notNull()
                table.column("projectId", .text).notNull()
                table.column("expiresAt", .double).notNull()
            }
            try db.create(table: "androidNotification") { table in
                table.primaryKey("activityId", .text)
                table.column("deviceId", .text).notNull()
                table.column("bundleId", .text).notNull()
                table.column("tag", .text).notNull()  // the sender's activity id
                table.column("islet", .text).notNull()  // data.islet as received
                table.column("messageName", .text).notNull()
                table.column("receivedAt", .double).notNull()
            }
            try db.execute(sql: "CREATE INDEX androidNotification_tag ON androidNotification (deviceId, bundleId, tag)")
        }
        migrator.registerMigration("v15: the push budget is each app's on each phone") { db in
            // docs/renewal.md. iOS counts priority-10 pushes per app and phone, not per activity:
            // the sends of the last hour, Unix seconds, one row per device and app — written by
            // the sender (a real phone) and by the device that plays one. It starts empty: at
            // most the hour before the upgrade goes uncounted.
            try db.create(table: "phoneBudget") { table in
                table.column("deviceId", .text).notNull()
                table.column("bundleId", .text).notNull()
                table.column("budgeted", .text).notNull()
                table.primaryKey(["deviceId", "bundleId"])
            }
        }
        migrator.registerMigration("v16: a delivery keeps the trace of the change that wrote it") { db in
            // docs/operations.md §1: W3C `traceparent`, when tracing is on; rows written before stay NULL.
            try db.alter(table: "delivery") { table in table.add(column: "traceparent", .text) }
        }
        migrator.registerMigration("v17: webhook endpoints and their attempts") { db in
            // docs/webhooks.md: an endpoint reads the event log from its cursor; its attempts are logged.
            try db.create(table: "webhookEndpoint") { table in
                table.primaryKey("id", .text)
                table.column("bundleId", .text).notNull()
                table.column("url", .text).notNull()
                table.column("description", .text).notNull()
                table.column("events", .text).notNull()
                table.column("enabled", .boolean).notNull()
                table.column("disabledReason", .text)
                table.column("secret", .text).notNull()
                table.column("previousSecret", .text)
                table.column("previousSecretUntil", .double)
                table.column("cursor", .integer).notNull()
                table.column("failingEvent", .integer)
                table.column("attempts", .integer).notNull()
                table.column("failingSince", .double)
                table.column("nextAttemptAt", .double)
                table.column("leaseOwner", .text)
                table.column("leaseUntil", .double)
                table.column("createdAt", .double).notNull()
                table.column("updatedAt", .double).notNull()
            }
            try db.execute(sql: "CREATE INDEX webhookEndpoint_bundleId ON webhookEndpoint (bundleId, createdAt)")
            try db.create(table: "webhookAttempt") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("endpointId", .text).notNull()
                table.column("event", .text).notNull()
                table.column("type", .text).notNull()
                table.column("attempt", .integer).notNull()
                table.column("at", .double).notNull()
                table.column("status", .integer)
                table.column("error", .text)
                table.column("latencyMs", .double)
                table.column("response", .text)
                table.column("deadLetter", .boolean).notNull()
            }
            try db.execute(sql: "CREATE INDEX webhookAttempt_endpoint ON webhookAttempt (endpointId, id)")
        }
        migrator.registerMigration("v18: an app's users, their phones and tags; sends and their phones; idempotency keys") { db in
            // docs/audiences.md: a user as written, and an index row per tag and per phone; a send
            // as one row, resolved into its phones; an activity's key found on one phone; the
            // Idempotency-Keys kept a day.
            try db.execute(sql: """
                CREATE TABLE appUser (
                    bundleId TEXT NOT NULL, externalId TEXT NOT NULL, devices TEXT NOT NULL, tags TEXT NOT NULL,
                    createdAt DOUBLE NOT NULL, updatedAt DOUBLE NOT NULL, PRIMARY KEY (bundleId, externalId)
                );
                CREATE TABLE appUserTag (
                    bundleId TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, externalId TEXT NOT NULL,
                    PRIMARY KEY (bundleId, name, value, externalId)
                );
                CREATE INDEX appUserTag_user ON appUserTag (bundleId, externalId);
                CREATE TABLE appUserDevice (
                    bundleId TEXT NOT NULL, deviceId TEXT NOT NULL, externalId TEXT NOT NULL, PRIMARY KEY (bundleId, deviceId, externalId)
                );
                CREATE INDEX appUserDevice_user ON appUserDevice (bundleId, externalId);
                CREATE TABLE send (id TEXT PRIMARY KEY, bundleId TEXT NOT NULL, status TEXT NOT NULL, at DOUBLE, json TEXT NOT NULL);
                CREATE INDEX send_bundleId ON send (bundleId, id);
                CREATE INDEX send_due ON send (status, at);
                CREATE TABLE sendTarget (
                    sendId TEXT NOT NULL, seq INTEGER NOT NULL, deviceId TEXT NOT NULL, outcome TEXT, activityId TEXT, reason TEXT, doneAt DOUBLE,
                    PRIMARY KEY (sendId, deviceId)
                );
                CREATE INDEX sendTarget_seq ON sendTarget (sendId, seq);
                CREATE INDEX sendTarget_waiting ON sendTarget (sendId, seq) WHERE outcome IS NULL;
                DROP INDEX activity_key;
                CREATE INDEX activity_key ON activity (bundleId, key, deviceId) WHERE key IS NOT NULL;
                CREATE TABLE idempotencyKey (
                    scope TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL, holder TEXT NOT NULL, state TEXT NOT NULL, status INTEGER,
                    contentType TEXT, body TEXT, createdAt DOUBLE NOT NULL, PRIMARY KEY (scope, key)
                );
                CREATE INDEX idempotencyKey_createdAt ON idempotencyKey (createdAt);
                """)
        }
        migrator.registerMigration("v19: Firebase installation IDs; Apple's key sets") { db in
            // docs/android.md: a phone token of kind `fid` is found as an `fcm` one is.
            // docs/delivery.md, "Key sets": an app's environment holds several keys, each team-scoped
            // or topic-specific; a provider key of Islet playing Apple has a kind and an environment.
            try db.execute(sql: """
                DROP INDEX phoneToken_fcm;
                CREATE INDEX phoneToken_fcm ON phoneToken (deviceId, bundleId) WHERE kind IN ('fcm', 'fid') AND retiredAt IS NULL;
                CREATE TABLE deliveryKey (
                    bundleId TEXT NOT NULL REFERENCES app(bundleId) ON DELETE CASCADE, environment TEXT NOT NULL, teamId TEXT NOT NULL,
                    keyId TEXT NOT NULL, privateKey TEXT NOT NULL, url TEXT, caCertificate TEXT, createdAt DOUBLE NOT NULL, failure TEXT,
                    kind TEXT NOT NULL DEFAULT 'team', topics TEXT, relatedKeyId TEXT, PRIMARY KEY (bundleId, environment, keyId)
                );
                INSERT INTO deliveryKey (bundleId, environment, teamId, keyId, privateKey, url, caCertificate, createdAt, failure)
                SELECT bundleId, environment, teamId, keyId, privateKey, url, caCertificate, createdAt, failure FROM deliveryCredential;
                DROP TABLE deliveryCredential;
                ALTER TABLE deliveryKey RENAME TO deliveryCredential;
                ALTER TABLE providerKey ADD COLUMN kind TEXT NOT NULL DEFAULT 'topic';
                ALTER TABLE providerKey ADD COLUMN environment TEXT;
                """)
        }
        migrator.registerMigration("v20: client keys and the installations they register") { db in
            // docs/installations.md: an app's publishable keys, kept as hashes; each installation
            // a device of its own, with the client key and the address (hashed) that made it, for
            // the limits; an app's secret for the user ids its backend signs.
            try db.execute(sql: """
                CREATE TABLE clientKey (
                    id TEXT PRIMARY KEY, bundleId TEXT NOT NULL REFERENCES app(bundleId) ON DELETE CASCADE, hash TEXT NOT NULL UNIQUE,
                    name TEXT NOT NULL, prefix TEXT NOT NULL, createdAt DOUBLE NOT NULL, revokedAt DOUBLE, lastUsedAt DOUBLE,
                    installations INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX clientKey_bundleId ON clientKey (bundleId, createdAt);
                CREATE TABLE installation (
                    id TEXT PRIMARY KEY, bundleId TEXT NOT NULL, platform TEXT NOT NULL, environment TEXT NOT NULL, userId TEXT,
                    clientKeyId TEXT NOT NULL, addressHash TEXT NOT NULL, createdAt DOUBLE NOT NULL, lastSeenAt DOUBLE NOT NULL,
                    revoked BOOLEAN NOT NULL DEFAULT 0
                );
                CREATE INDEX installation_app ON installation (bundleId, id);
                CREATE INDEX installation_user ON installation (bundleId, userId) WHERE userId IS NOT NULL;
                CREATE INDEX installation_clientKey ON installation (clientKeyId, createdAt);
                CREATE INDEX installation_address ON installation (addressHash, createdAt);
                ALTER TABLE app ADD COLUMN userVerificationSecret TEXT;
                """)
        }
        return migrator
    }
}

extension Schema {
    /// Refuses a database that a newer Islet migrated (a downgrade), before anything is written:
    /// it holds a migration this code does not know, and this code would read and write it as the
    /// schema it knows. Names both versions.
    static func refuseNewer(_ db: Database, path: String) throws {
        guard try db.tableExists("grdb_migrations") else { return }
        let known = migrator.migrations
        let applied = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid")
        guard let unknown = applied.last(where: { !known.contains($0) }) else { return }
        throw IsletError(
            .invalidRequest,
            "\(path) was written by a newer Islet: its schema is at \"\(unknown)\", and this Islet knows up to \"\(known.last ?? "none")\". "
                + "Run the newer Islet on it, or restore a backup that this version wrote (islet restore)."
        )
    }
}
