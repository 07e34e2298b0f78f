import Foundation
import IsletCore
import IsletEngine

/// Webhook endpoints and their attempt log (docs/webhooks.md).
extension SQLReading {
    /// One endpoint; in a write, locked until the transaction ends, so two nodes taking its
    /// lease (or a round's progress and a change through the API) take turns: on PostgreSQL,
    /// the second reads what the first wrote, and does not write over it.
    public func webhookEndpoint(_ id: String) throws -> WebhookEndpoint? {
        try session.row("SELECT * FROM webhookEndpoint WHERE id = $1\(try session.rowsLock())", [id], SQLRows.webhookEndpoint)
    }

    public func webhookEndpoints(bundleId: BundleID?) throws -> [WebhookEndpoint] {
        var conditions = SQLConditions()
        conditions.equal("bundleId", bundleId)
        return try session.rows(
            "SELECT * FROM webhookEndpoint \(conditions.whereClause) ORDER BY bundleId, createdAt, id", conditions.values, SQLRows.webhookEndpoint
        )
    }

    public func webhookAttempts(endpointId: String, deadLettersOnly: Bool, before id: Int64?, limit: Int) throws -> [WebhookAttempt] {
        var conditions = SQLConditions()
        conditions.equal("endpointId", endpointId)
        if deadLettersOnly { conditions.append { value in "deadLetter = \(value(true))" } }
        if let id { conditions.append { value in "id < \(value(id))" } }
        let limit = conditions.value(limit)
        return try session.rows(
            "SELECT * FROM webhookAttempt \(conditions.whereClause) ORDER BY id DESC LIMIT \(limit)", conditions.values, SQLRows.webhookAttempt
        )
    }
}

extension SQLWriting {
    public func putWebhookEndpoint(_ endpoint: WebhookEndpoint) throws {
        try session.execute(
            """
            INSERT INTO webhookEndpoint (id, bundleId, url, description, events, enabled, disabledReason, secret, previousSecret,
                previousSecretUntil, cursor, failingEvent, attempts, failingSince, nextAttemptAt, leaseOwner, leaseUntil, createdAt, updatedAt)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
            ON CONFLICT (id) DO UPDATE SET url = excluded.url, description = excluded.description, events = excluded.events,
                enabled = excluded.enabled, disabledReason = excluded.disabledReason, secret = excluded.secret,
                previousSecret = excluded.previousSecret, previousSecretUntil = excluded.previousSecretUntil, cursor = excluded.cursor,
                failingEvent = excluded.failingEvent, attempts = excluded.attempts, failingSince = excluded.failingSince,
                nextAttemptAt = excluded.nextAttemptAt, leaseOwner = excluded.leaseOwner, leaseUntil = excluded.leaseUntil,
                updatedAt = excluded.updatedAt
            """,
            [
                endpoint.id, endpoint.bundleId, endpoint.url, endpoint.description, try WireFormat.string(endpoint.events.names),
                endpoint.enabled, endpoint.disabledReason, endpoint.secret, endpoint.previousSecret,
                endpoint.previousSecretUntil?.timeIntervalSince1970, endpoint.cursor, endpoint.failingEvent, endpoint.attempts,
                endpoint.failingSince?.timeIntervalSince1970, endpoint.nextAttemptAt?.timeIntervalSince1970,
                endpoint.leaseOwner, endpoint.leaseUntil?.timeIntervalSince1970, endpoint.createdAt.timeIntervalSince1970, endpoint.updatedAt.timeIntervalSince1970,
            ]
        )
    }

    public func deleteWebhookEndpoint(_ id: String) throws -> Bool {
        try session.execute("DELETE FROM webhookAttempt WHERE endpointId = $1", [id])
        return try session.count("DELETE FROM webhookEndpoint WHERE id = $1", [id]) > 0
    }

    public func addWebhookAttempts(_ attempts: [WebhookAttempt]) throws {
        for attempt in attempts {
            try session.execute(
                """
                INSERT INTO webhookAttempt (endpointId, event, type, attempt, at, status, error, latencyMs, response, deadLetter)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                """,
                [
                    attempt.endpointId, attempt.event, attempt.type.rawValue, attempt.attempt, attempt.at.timeIntervalSince1970,
                    attempt.status, attempt.error, attempt.latencyMs, attempt.response, attempt.deadLetter,
                ]
            )
        }
    }
}

extension SQLRows {
    public static func webhookEndpoint(_ row: any SQLRow) throws -> WebhookEndpoint {
        WebhookEndpoint(
            id: try row["id"], bundleId: try row["bundleId"], url: try row["url"], description: try row["description"],
            events: try WebhookEventSelection(WireFormat.decoder().decode([String].self, from: Data(try row["events", as: String.self].utf8))),
            enabled: try row["enabled"], disabledReason: try row["disabledReason"], secret: try row["secret"],
            previousSecret: try row["previousSecret"], previousSecretUntil: try row.optionalDate("previousSecretUntil"),
            cursor: try row["cursor"], failingEvent: try row["failingEvent"], attempts: try row["attempts"],
            failingSince: try row.optionalDate("failingSince"), nextAttemptAt: try row.optionalDate("nextAttemptAt"),
            leaseOwner: try row["leaseOwner"], leaseUntil: try row.optionalDate("leaseUntil"), createdAt: try row.date("createdAt"), updatedAt: try row.date("updatedAt")
        )
    }

    public static func webhookAttempt(_ row: any SQLRow) throws -> WebhookAttempt {
        WebhookAttempt(
            id: try row["id"], endpointId: try row["endpointId"], event: try row["event"],
            type: WebhookEventType(rawValue: try row["type"]) ?? .webhookTest, attempt: try row["attempt"], at: try row.date("at"),
            status: try row["status"], error: try row["error"], latencyMs: try row["latencyMs"], response: try row["response"],
            deadLetter: try row["deadLetter"]
        )
    }
}
