import Foundation
import IsletCore
@testable import IsletPostgres
import Testing

/// A commit's notification carries its events when they fit, so other nodes publish them
/// without reading them back; what it cannot carry, they read.
struct EventNoticeTests {
    private func pending(_ count: Int, data: String = #"{"speed":1}"#) -> [PostgresTransaction.PendingEvent] {
        (0..<count).map { index in
            PostgresTransaction.PendingEvent(
                time: Date(timeIntervalSince1970: 1_795_000_000.123456 + Double(index) / 7), type: .contentUpdated,
                bundleId: "com.example.bike", deviceId: "phone-\"1\"", activityId: index == 0 ? nil : "a\(index)", data: data
            )
        }
    }

    /// The ids of a payload read as one without its events; `nil` otherwise.
    private func idsAlone(_ payload: String) -> [EventID]? {
        guard let notice = EventNotice(payload: payload), notice.events == nil else { return nil }
        return notice.ids
    }

    /// The events a node builds from a notification are the events as read from the table
    /// (`EncodedEvent`'s JSON byte for byte: time, quoting, a missing activity).
    @Test func aNotificationCarriesItsEventsExactly() throws {
        let events = pending(3)
        let ids: [EventID] = [7, 9, 10]
        let notice = try #require(EventNotice(payload: "7,9,10" + EventNotice.body(of: events)))
        #expect(notice.ids == ids)
        // Built field by field, as a read of the table builds them.
        let expected = zip(ids, events).map { id, event in
            EncodedEvent(id: id, type: event.type, time: event.time, bundleId: event.bundleId, deviceId: event.deviceId, activityId: event.activityId, dataJSON: event.data)
        }
        #expect(notice.events == expected)
    }

    /// PostgreSQL refuses a payload of 8,000 bytes: events that would not fit beside their ids
    /// are left out, and the notification asks for a read.
    @Test func eventsThatWouldNotFitAreLeftOut() throws {
        let large = pending(2, data: "{\"text\":\"" + String(repeating: "x", count: 4_000) + "\"}")
        #expect(EventNotice.body(of: large).isEmpty)
        let many = pending(EventNotice.payloadLimit / EventNotice.idBytes)
        #expect(EventNotice.body(of: many).isEmpty)
        let fits = pending(20)
        let body = EventNotice.body(of: fits)
        #expect(!body.isEmpty)
        let ids = (1...20).map { String(Int64.max - 20 + Int64($0)) }.joined(separator: ",")
        #expect((ids + body).utf8.count <= EventNotice.payloadLimit)
    }

    /// A payload of ids alone (events left out, or a node of an earlier version sending its last
    /// id), or events of a type this version does not know: ids without events, so the tail
    /// reads. Not a payload at all: nothing.
    @Test func whatANotificationCannotCarryIsRead() throws {
        #expect(idsAlone("42") == [42])
        #expect(idsAlone("41,42") == [41, 42])
        let unknown = EventNotice.body(of: pending(1)).replacingOccurrences(of: "contentUpdated", with: "somethingNew")
        #expect(idsAlone("5" + unknown) == [5])
        #expect(idsAlone("5,6" + EventNotice.body(of: pending(1))) == [5, 6])
        #expect(idsAlone("5\nnot json") == [5])
        for garbage in ["", "x", "5,,6", "5,x", "\n[]"] { #expect(EventNotice(payload: garbage) == nil, "\(garbage)") }
    }
}
