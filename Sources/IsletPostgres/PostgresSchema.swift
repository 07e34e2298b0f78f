import Foundation

/// The PostgreSQL store's schema, as numbered migrations: a migration, once released, never
/// changes. The tables are SQLite's (`IsletStore`'s `Schema`) as its ten migrations left them,
/// written once for PostgreSQL, with two differences:
///
/// - An event's id is given at commit from the `event_id` sequence, under a lock every writer
///   takes shared just before committing (docs/cluster.md, "Event ids"): readers publish ids
///   in increasing order, never past one still being committed.
/// - An activity's history is read through an index of events by activity, not SQLite's chain
///   of `previous` ids (which saved SQLite a random-place index insert per change).
///
/// Identifiers are written unquoted, so PostgreSQL keeps them lower case: rows are read by
/// lower-case names.
enum PostgresSchema {
    struct Migration {
        let version: Int
        let name: String
        let sql: String

        /// Its statements, one by one (a statement's own text holds no `;`).
        var statements: [String] {
            sql.split(separator: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
        }
    }

    /// The lock `migrate` holds while it works: nodes starting together migrate one at a time.
    static let migrationLock: Int64 = 0x1515_7E70_0001

    static let migrations: [Migration] = [
        Migration(version: 1, name: "the tables of SQLite's v10, events numbered at commit", sql: """
            CREATE TABLE app (
                bundleId text PRIMARY KEY,
                name text NOT NULL,
                createdAt double precision NOT NULL,
                strictPushes boolean NOT NULL DEFAULT false
            );
            CREATE TABLE device (
                id text PRIMARY KEY,
                name text NOT NULL,
                createdAt double precision NOT NULL
            );
            CREATE TABLE apiKey (
                hash text PRIMARY KEY,
                bundleId text REFERENCES app ON DELETE CASCADE,
                deviceId text REFERENCES device ON DELETE CASCADE,
                createdAt double precision NOT NULL
            );
            CREATE UNIQUE INDEX apiKey_deviceId ON apiKey (deviceId);
            CREATE TABLE appSettings (
                deviceId text NOT NULL REFERENCES device ON DELETE CASCADE,
                bundleId text NOT NULL REFERENCES app ON DELETE CASCADE,
                activitiesEnabled boolean NOT NULL,
                frequentUpdates boolean NOT NULL,
                PRIMARY KEY (deviceId, bundleId)
            );
            CREATE TABLE activity (
                id text PRIMARY KEY,
                bundleId text NOT NULL REFERENCES app,
                deviceId text NOT NULL REFERENCES device,
                attributesType text NOT NULL,
                state text NOT NULL,
                key text,
                deadline double precision,
                relevanceScore double precision NOT NULL,
                startTime double precision NOT NULL,
                createdAt double precision NOT NULL,
                updatedAt double precision NOT NULL,
                body text NOT NULL,
                channelId text
            );
            CREATE INDEX activity_deadline ON activity (deadline) WHERE deadline IS NOT NULL;
            CREATE INDEX activity_device_app_state ON activity (deviceId, bundleId, state);
            CREATE INDEX activity_app_state ON activity (bundleId, state);
            CREATE INDEX activity_key ON activity (bundleId, key) WHERE key IS NOT NULL;
            CREATE INDEX activity_channel ON activity (channelId) WHERE channelId IS NOT NULL;
            CREATE SEQUENCE event_id;
            CREATE TABLE event (
                id bigint PRIMARY KEY,
                time double precision NOT NULL,
                type text NOT NULL,
                bundleId text NOT NULL,
                deviceId text NOT NULL,
                activityId text,
                data text NOT NULL
            );
            CREATE INDEX event_activity ON event (activityId, id) WHERE activityId IS NOT NULL;
            CREATE INDEX event_time ON event (time);
            CREATE TABLE pushToken (
                token text PRIMARY KEY,
                kind text NOT NULL,
                activityId text,
                deviceId text NOT NULL,
                bundleId text NOT NULL,
                createdAt double precision NOT NULL,
                retiredAt double precision,
                retiredReason text
            );
            CREATE INDEX pushToken_current ON pushToken (kind, deviceId, bundleId, activityId) WHERE retiredAt IS NULL;
            CREATE TABLE providerKey (
                keyId text NOT NULL,
                teamId text NOT NULL,
                bundleId text NOT NULL REFERENCES app ON DELETE CASCADE,
                publicKey text NOT NULL,
                createdAt double precision NOT NULL,
                PRIMARY KEY (keyId, bundleId)
            );
            CREATE TABLE activityType (
                bundleId text NOT NULL REFERENCES app ON DELETE CASCADE,
                name text NOT NULL,
                body text NOT NULL,
                PRIMARY KEY (bundleId, name)
            );
            CREATE TABLE channel (
                id text PRIMARY KEY,
                bundleId text NOT NULL REFERENCES app ON DELETE CASCADE,
                storagePolicy bigint NOT NULL,
                createdAt double precision NOT NULL,
                message text,
                messageAt double precision,
                messageExpiresAt double precision,
                environment text
            );
            CREATE INDEX channel_app ON channel (bundleId);
            CREATE TABLE layout (
                bundleId text NOT NULL REFERENCES app ON DELETE CASCADE,
                attributesType text NOT NULL,
                body text NOT NULL,
                revision bigint NOT NULL,
                updatedAt double precision NOT NULL,
                PRIMARY KEY (bundleId, attributesType)
            );
            CREATE TABLE writeProbe (
                node text PRIMARY KEY,
                at double precision NOT NULL
            );
            CREATE TABLE deliveryCredential (
                bundleId text NOT NULL REFERENCES app ON DELETE CASCADE,
                environment text NOT NULL,
                teamId text NOT NULL,
                keyId text NOT NULL,
                privateKey text NOT NULL,
                url text,
                caCertificate text,
                createdAt double precision NOT NULL,
                failure text,
                PRIMARY KEY (bundleId, environment)
            );
            CREATE TABLE phoneToken (
                token text PRIMARY KEY,
                kind text NOT NULL,
                bundleId text NOT NULL,
                deviceId text NOT NULL,
                attributesType text,
                activityId text,
                environment text NOT NULL,
                createdAt double precision NOT NULL,
                retiredAt double precision,
                retiredReason text,
                appleTimestamp double precision,
                lastAt double precision,
                lastStatus bigint,
                lastReason text
            );
            CREATE INDEX phoneToken_pushToStart ON phoneToken (deviceId, bundleId, attributesType)
                WHERE kind = 'pushToStart' AND retiredAt IS NULL;
            CREATE INDEX phoneToken_update ON phoneToken (activityId) WHERE kind = 'update' AND retiredAt IS NULL;
            CREATE INDEX phoneToken_device ON phoneToken (deviceId);
            CREATE TABLE phoneActivity (
                activityId text PRIMARY KEY,
                bundleId text NOT NULL,
                deviceId text NOT NULL,
                environment text NOT NULL,
                channelId text,
                state text NOT NULL,
                budgeted text NOT NULL
            );
            CREATE TABLE delivery (
                id bigserial PRIMARY KEY,
                orderKey text NOT NULL,
                activityId text,
                bundleId text NOT NULL,
                deviceId text,
                channelId text,
                event text NOT NULL,
                payload text NOT NULL,
                alert boolean NOT NULL,
                expiration double precision,
                state text NOT NULL,
                attempts bigint NOT NULL,
                nextAttemptAt double precision NOT NULL,
                leaseUntil double precision,
                createdAt double precision NOT NULL,
                finishedAt double precision,
                apnsId text NOT NULL
            );
            CREATE INDEX delivery_unfinished ON delivery (orderKey, id) WHERE state IN ('pending', 'sending', 'held');
            CREATE INDEX delivery_due ON delivery (state, nextAttemptAt) WHERE state IN ('pending', 'sending');
            """),
        // The listing's order as one row value, `(listingScore, startTime, id)`, so a page seeks
        // to where the previous ended; an app key's listing has an index of its own. Ids compare
        // byte by byte, as SQLite's do.
        Migration(version: 2, name: "activities listed page by page in relevance order", sql: """
            ALTER TABLE activity ADD COLUMN listingScore double precision GENERATED ALWAYS AS (-relevanceScore) STORED;
            CREATE INDEX activity_listing ON activity (listingScore, startTime, id COLLATE "C");
            CREATE INDEX activity_app_listing ON activity (bundleId, listingScore, startTime, id COLLATE "C")
            """),
        Migration(version: 3, name: "an app's delivery paused", sql: """
            ALTER TABLE app ADD COLUMN deliveryPaused boolean NOT NULL DEFAULT false
            """),
        // Most changes rewrite an activity's body and nothing indexed: room left on each page
        // lets PostgreSQL write the new version beside the old (a HOT update), touching no index.
        Migration(version: 4, name: "room on activity pages for updates in place", sql: """
            ALTER TABLE activity SET (fillfactor = 70)
            """),
        // The outbox is bounded: retention deletes finished deliveries oldest first, and with a
        // dismissed activity its phone tokens (`purge`).
        Migration(version: 5, name: "finished deliveries and an activity's phone tokens found for the purge", sql: """
            CREATE INDEX delivery_finished ON delivery (finishedAt) WHERE finishedAt IS NOT NULL;
            CREATE INDEX phoneToken_activity ON phoneToken (activityId) WHERE activityId IS NOT NULL
            """),
        // Android phones, their apps' FCM credentials, and Islet playing Google (SQLite's v14).
        Migration(version: 6, name: "Android phones, FCM credentials, and Islet playing Google", sql: """
            ALTER TABLE device ADD COLUMN platform text NOT NULL DEFAULT 'ios';
            ALTER TABLE phoneActivity ADD COLUMN platform text NOT NULL DEFAULT 'ios';
            CREATE TABLE fcmCredential (
                bundleId text PRIMARY KEY REFERENCES app ON DELETE CASCADE,
                projectId text NOT NULL,
                clientEmail text NOT NULL,
                privateKeyId text NOT NULL,
                tokenUri text NOT NULL,
                serviceAccount text NOT NULL,
                url text,
                caCertificate text,
                createdAt double precision NOT NULL,
                failure text
            );
            CREATE INDEX phoneToken_fcm ON phoneToken (deviceId, bundleId) WHERE kind = 'fcm' AND retiredAt IS NULL;
            CREATE TABLE fcmServiceAccount (
                clientEmail text PRIMARY KEY,
                projectId text NOT NULL,
                privateKeyId text NOT NULL,
                publicKey text NOT NULL,
                createdAt double precision NOT NULL
            );
            CREATE TABLE fcmAccessToken (
                hash text PRIMARY KEY,
                clientEmail text NOT NULL,
                projectId text NOT NULL,
                expiresAt double precision NOT NULL
            );
            CREATE TABLE androidNotification (
                activityId text PRIMARY KEY,
                deviceId text NOT NULL,
                bundleId text NOT NULL,
                tag text NOT NULL,
                islet text NOT NULL,
                messageName text NOT NULL,
                receivedAt double precision NOT NULL
            );
            CREATE INDEX androidNotification_tag ON androidNotification (deviceId, bundleId, tag)
            """),
        // The push budget is each app's on each phone (SQLite's v15).
        Migration(version: 7, name: "the push budget is each app's on each phone", sql: """
            CREATE TABLE phoneBudget (
                deviceId text NOT NULL,
                bundleId text NOT NULL,
                budgeted text NOT NULL,
                PRIMARY KEY (deviceId, bundleId)
            )
            """),
        // A delivery keeps the trace of the change that wrote it (SQLite's v16).
        Migration(version: 8, name: "a delivery keeps the trace of the change that wrote it", sql: """
            ALTER TABLE delivery ADD COLUMN traceparent text
            """),
        // Webhook endpoints and their attempts (SQLite's v17).
        Migration(version: 9, name: "webhook endpoints and their attempts", sql: """
            CREATE TABLE webhookEndpoint (
                id text PRIMARY KEY,
                bundleId text NOT NULL,
                url text NOT NULL,
                description text NOT NULL,
                events text NOT NULL,
                enabled boolean NOT NULL,
                disabledReason text,
                secret text NOT NULL,
                previousSecret text,
                previousSecretUntil double precision,
                cursor bigint NOT NULL,
                failingEvent bigint,
                attempts bigint NOT NULL,
                failingSince double precision,
                nextAttemptAt double precision,
                leaseOwner text,
                leaseUntil double precision,
                createdAt double precision NOT NULL,
                updatedAt double precision NOT NULL
            );
            CREATE INDEX webhookEndpoint_bundleId ON webhookEndpoint (bundleId, createdAt);
            CREATE TABLE webhookAttempt (
                id bigserial PRIMARY KEY,
                endpointId text NOT NULL,
                event text NOT NULL,
                type text NOT NULL,
                attempt bigint NOT NULL,
                at double precision NOT NULL,
                status bigint,
                error text,
                latencyMs double precision,
                response text,
                deadLetter boolean NOT NULL
            );
            CREATE INDEX webhookAttempt_endpoint ON webhookAttempt (endpointId, id)
            """),
        // An app's users, their phones and tags; sends and their phones; idempotency keys (SQLite's v18).
        Migration(version: 10, name: "an app's users, their phones and tags; sends and their phones; idempotency keys", sql: """
            CREATE TABLE appUser (
                bundleId text NOT NULL, externalId text NOT NULL, devices text NOT NULL, tags text NOT NULL,
                createdAt double precision NOT NULL, updatedAt double precision NOT NULL, PRIMARY KEY (bundleId, externalId)
            );
            CREATE TABLE appUserTag (
                bundleId text NOT NULL, name text NOT NULL, value text NOT NULL, externalId text NOT NULL,
                PRIMARY KEY (bundleId, name, value, externalId)
            );
            CREATE INDEX appUserTag_user ON appUserTag (bundleId, externalId);
            CREATE TABLE appUserDevice (
                bundleId text NOT NULL, deviceId text NOT NULL, externalId text NOT NULL, PRIMARY KEY (bundleId, deviceId, externalId)
            );
            CREATE INDEX appUserDevice_user ON appUserDevice (bundleId, externalId);
            CREATE TABLE send (id text PRIMARY KEY, bundleId text NOT NULL, status text NOT NULL, at double precision, json text NOT NULL);
            CREATE INDEX send_bundleId ON send (bundleId, id);
            CREATE INDEX send_due ON send (status, at);
            CREATE TABLE sendTarget (
                sendId text NOT NULL, seq bigint NOT NULL, deviceId text NOT NULL, outcome text, activityId text, reason text,
                doneAt double precision, PRIMARY KEY (sendId, deviceId)
            );
            CREATE INDEX sendTarget_seq ON sendTarget (sendId, seq);
            CREATE INDEX sendTarget_waiting ON sendTarget (sendId, seq) WHERE outcome IS NULL;
            DROP INDEX activity_key;
            CREATE INDEX activity_key ON activity (bundleId, key, deviceId) WHERE key IS NOT NULL;
            CREATE TABLE idempotencyKey (
                scope text NOT NULL, key text NOT NULL, digest text NOT NULL, holder text NOT NULL, state text NOT NULL, status bigint,
                contentType text, body text, createdAt double precision NOT NULL, PRIMARY KEY (scope, key)
            );
            CREATE INDEX idempotencyKey_createdAt ON idempotencyKey (createdAt)
            """),
        Migration(version: 11, name: "Firebase installation IDs; Apple's key sets", sql: """
            DROP INDEX phoneToken_fcm;
            CREATE INDEX phoneToken_fcm ON phoneToken (deviceId, bundleId) WHERE kind IN ('fcm', 'fid') AND retiredAt IS NULL;
            ALTER TABLE deliveryCredential DROP CONSTRAINT deliveryCredential_pkey;
            ALTER TABLE deliveryCredential ADD PRIMARY KEY (bundleId, environment, keyId);
            ALTER TABLE deliveryCredential ADD COLUMN kind text NOT NULL DEFAULT 'team';
            ALTER TABLE deliveryCredential ADD COLUMN topics text;
            ALTER TABLE deliveryCredential ADD COLUMN relatedKeyId text;
            ALTER TABLE providerKey ADD COLUMN kind text NOT NULL DEFAULT 'topic';
            ALTER TABLE providerKey ADD COLUMN environment text
            """),
        // Client keys and the installations they register (SQLite's v20).
        Migration(version: 12, name: "client keys and the installations they register", sql: """
            CREATE TABLE clientKey (
                id text PRIMARY KEY, bundleId text NOT NULL REFERENCES app(bundleId) ON DELETE CASCADE, hash text NOT NULL UNIQUE,
                name text NOT NULL, prefix text NOT NULL, createdAt double precision NOT NULL, revokedAt double precision,
                lastUsedAt double precision, installations bigint NOT NULL DEFAULT 0
            );
            CREATE INDEX clientKey_bundleId ON clientKey (bundleId, createdAt);
            CREATE TABLE installation (
                id text PRIMARY KEY, bundleId text NOT NULL, platform text NOT NULL, environment text NOT NULL, userId text,
                clientKeyId text NOT NULL, addressHash text NOT NULL, createdAt double precision NOT NULL,
                lastSeenAt double precision NOT NULL, revoked boolean NOT NULL DEFAULT false
            );
            CREATE INDEX installation_app ON installation (bundleId, id);
            CREATE INDEX installation_user ON installation (bundleId, userId) WHERE userId IS NOT NULL;
            CREATE INDEX installation_clientKey ON installation (clientKeyId, createdAt);
            CREATE INDEX installation_address ON installation (addressHash, createdAt);
            ALTER TABLE app ADD COLUMN userVerificationSecret text
            """),
    ]
}
