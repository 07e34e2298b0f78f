import Foundation
import IsletCore

/// What a commit's `NOTIFY islet_events` says: its events' ids and, when they fit in a
/// notification, the events themselves — so another node's tail publishes them as they come,
/// without reading them back (`EventTail.noticed(_:)`).
///
/// The payload is the ids, increasing and comma-separated (PostgreSQL writes them, as it draws
/// them), then — when the events fit — a line break and the events in the same order without
/// their ids, as JSON (the writer encodes them before the statement). PostgreSQL refuses a
/// payload of 8,000 bytes or more, so events that would not fit are left out and the nodes read
/// them, and more ids than fit (`maximumIds`) are given as the last alone. A payload of ids alone (events left out, or a node of an earlier version that sends
/// only the last id) asks the tail to read.
struct EventNotice: Sendable, Equatable {
    /// The transaction's event ids, increasing.
    var ids: [EventID]
    /// Its events, numbered; `nil` when they were left out.
    var events: [EncodedEvent]?

    /// The most a payload may take (PostgreSQL's limit is 8,000 bytes, its terminator included).
    static let payloadLimit = 7_999
    /// The most bytes an id and its comma take (`Int64.max` has 19 digits).
    static let idBytes = 20
    /// The most ids a payload names; a commit of more names its last alone, and the tails read
    /// (a send's batch of 1,000 phones once failed its commit here, again and again).
    static let maximumIds = payloadLimit / idBytes

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }()

    /// The part of the payload after the ids for `events` ("\n" and their JSON), or "" when it
    /// would not fit beside their ids.
    static func body(of events: [PostgresTransaction.PendingEvent]) -> String {
        guard let json = try? encoder.encode(events) else { return "" }
        let room = payloadLimit - events.count * idBytes - 1
        guard json.count <= room else { return "" }
        return "\n" + String(decoding: json, as: UTF8.self)
    }

    /// Reads a payload; `nil` when it is not one (the tail then reads).
    init?(payload: String) {
        let parts = payload.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        let fields = parts[0].split(separator: ",", omittingEmptySubsequences: false)
        let ids = fields.compactMap { EventID($0) }
        guard !ids.isEmpty, ids.count == fields.count else { return nil }
        self.ids = ids
        // A type this version does not know fails to decode: the tail reads, and passes it over.
        guard parts.count == 2,
              let pending = try? Self.decoder.decode([PostgresTransaction.PendingEvent].self, from: Data(parts[1].utf8)),
              pending.count == ids.count
        else { return }
        events = zip(ids, pending).map { id, event in event.numbered(id) }
    }
}
