import Foundation
import IsletCore
import Testing

/// `JSONWriter` writes what every change stores and publishes; it must write exactly the bytes
/// `Codable` with `WireFormat.encoder()` does, so nothing a client, a stored row or a memo
/// compares can tell the two apart. Random values, from a fixed seed, compared byte for byte.
@Suite("JSON writer")
struct JSONWriterTests {
    private func encoded<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try WireFormat.encoder().encode(value), as: UTF8.self)
    }

    private func written<T: JSONWritable>(_ value: T) throws -> String {
        var json = JSONWriter()
        try value.write(to: &json)
        return json.text
    }

    @Test func randomValuesAreWrittenAsTheEncoderWritesThem() throws {
        var random = Random(seed: 17)
        for _ in 0..<3_000 {
            let value = random.value(depth: 3)
            #expect(try written(value) == encoded(value))
            #expect(WireFormat.encodedSize(value) == (try WireFormat.encoder().encode(value)).count)
        }
    }

    @Test func randomActivitiesAndEventsAreWrittenAsTheEncoderWritesThem() throws {
        var random = Random(seed: 29)
        for _ in 0..<1_000 {
            let activity = random.activity()
            #expect(try written(activity) == encoded(activity))
            #expect(try WireFormat.string(activity) == encoded(activity))
            let content = activity.content
            let payloads: [EventPayload] = [
                .started(activity),
                .contentUpdated(ContentChange(content: content, timestamp: random.date())),
                .stateChanged(StateChange(from: .active, to: random.pick(ActivityState.allCases), reason: random.pick(StateChangeReason.allCases), at: random.date())),
                .alert(Alert(title: random.string(), body: random.string(), sound: random.bool() ? random.string() : nil)),
                .updateIgnored(IgnoredUpdate(
                    reason: random.pick(IgnoreReason.allCases), action: "update", content: random.bool() ? content : nil,
                    timestamp: random.date(), lastUpdateTimestamp: random.bool() ? random.date() : nil
                )),
                .pushTokenUpdated(PushTokenChange(
                    pushToken: random.string(), kind: random.pick([.activity, .pushToStart, .phoneUpdate, .phonePushToStart, .fcm]),
                    attributesType: random.bool() ? random.string() : nil
                )),
                .budgetExhausted(BudgetExhaustion(perHour: random.below(100) + 1, spent: random.below(100) + 1, nextRefillAt: random.date())),
                .delivery(random.deliveryReport()),
            ]
            for payload in payloads {
                let reference: String
                switch payload {
                case .started(let value): reference = try encoded(value)
                case .contentUpdated(let value): reference = try encoded(value)
                case .stateChanged(let value): reference = try encoded(value)
                case .alert(let value): reference = try encoded(value)
                case .updateIgnored(let value): reference = try encoded(value)
                case .pushTokenUpdated(let value): reference = try encoded(value)
                case .budgetExhausted(let value): reference = try encoded(value)
                case .delivery(let value): reference = try encoded(value)
                default: continue
                }
                #expect(payload.encodedData() == reference, "\(payload.type)")
            }
        }
    }

    /// A webhook's `data`, for every type's fields, and its whole body: what the encoder writes.
    @Test func webhookBodiesAreWrittenAsTheEncoderWritesThem() throws {
        var random = Random(seed: 43)
        for _ in 0..<500 {
            var data = WebhookEvent.Data()
            if random.bool() { data.activity = random.activity() }
            data.source = random.bool() ? random.string() : nil
            data.by = random.bool() ? random.string() : nil
            data.from = random.bool() ? random.string() : nil
            data.to = random.bool() ? random.string() : nil
            data.kind = random.bool() ? random.string() : nil
            data.reported = random.bool() ? random.bool() : nil
            data.attributesType = random.bool() ? random.string() : nil
            data.deviceId = random.bool() ? random.string() : nil
            data.activityId = random.bool() ? random.string() : nil
            data.reason = random.bool() ? random.string() : nil
            data.message = random.bool() ? random.string() : nil
            if random.bool() { data.delivery = random.deliveryReport() }
            if random.bool() { data.budget = BudgetExhaustion(perHour: random.below(100), spent: random.below(100), nextRefillAt: random.date()) }
            #expect(try written(data) == encoded(data))
            // The body around it: its members in the wire format's order, each as encoded.
            let (id, type, bundleId) = ("evt_\(random.below(1_000_000))", random.pick(WebhookEventType.allCases), random.string())
            let createdAt = Date(timeIntervalSince1970: 1_795_240_458.5)
            let event = WebhookEvent(id: id, type: type, eventId: 1, createdAt: createdAt, bundleId: bundleId, activityId: nil, deviceId: nil, data: data)
            let expected = try #"{"bundleId":\#(encoded(bundleId)),"createdAt":"2026-11-21T05:54:18.500Z","data":\#(encoded(data)),"#
                + #""id":\#(encoded(id)),"type":\#(encoded(type)),"version":1}"#
            #expect(event.body == expected)
        }
    }

    @Test(arguments: [
        0.0, -0.0, 1, -1, 0.1, 1.5, -3.25, 999_999_999_999_999, 1e15, 1e16, 1e21, 1e22, 1.2345678901234568e17, 1e-7, .leastNonzeroMagnitude,
        1.7976931348623157e308, 9_007_199_254_740_992, 1_764_000_000.123, 12_345_678.9, -1e15, -1e-300,
    ])
    func numbersAreWrittenAsTheEncoderWritesThem(_ number: Double) throws {
        #expect(try written(JSONValue.number(number)) == encoded(JSONValue.number(number)))
    }

    @Test func aNumberJSONCannotHoldIsRefusedAsTheEncoderRefusesIt() {
        for number in [Double.nan, .infinity, -.infinity] {
            #expect(throws: EncodingError.self) { try written(JSONValue.number(number)) }
            #expect(throws: EncodingError.self) { try encoded(JSONValue.number(number)) }
        }
    }

    @Test func everyControlCharacterAndEscapeIsWrittenAsTheEncoderWritesIt() throws {
        var text = ""
        for scalar in 0..<0x80 { text.unicodeScalars.append(Unicode.Scalar(UInt8(scalar))) }
        text += "/é\u{2028}\u{FF01}😀e\u{301}"
        #expect(try written(JSONValue.string(text)) == encoded(JSONValue.string(text)))
        let keys: JSONValue = ["\u{FF01}": 1, "😀": 2, "é": 3, "e\u{301}x": 4, "éa": 5, "B": 6, "a": 7, "a10": 8, "a9": 9, "_": 10]
        #expect(try written(keys) == encoded(keys))
    }
}

/// `JSONReadable` reads what the decoder reads (the events a webhook reads back, their
/// content and state changes), and refuses what it refuses.
@Suite("JSON reading")
struct JSONReadingTests {
    @Test func randomEventsAreReadAsTheDecoderReadsThem() throws {
        var random = Random(seed: 61)
        for index in 0..<1_000 {
            let activity = random.activity()
            let payloads: [EventPayload] = [
                .started(activity),
                .contentUpdated(ContentChange(content: activity.content, timestamp: random.date())),
                .stateChanged(StateChange(from: .active, to: random.pick(ActivityState.allCases), reason: random.pick(StateChangeReason.allCases), at: random.date())),
            ]
            for payload in payloads {
                let encoded = EncodedEvent(
                    id: Int64(index), type: payload.type, time: random.date(), bundleId: activity.bundleId, deviceId: activity.deviceId,
                    activityId: random.bool() ? activity.id : nil, dataJSON: payload.encodedData()
                )
                let reference = try WireFormat.decoder().decode(Event.self, from: Data(encoded.json.utf8))
                let event = try encoded.decoded()
                #expect(event == reference)
                // (Not always the value written: a whole `.number` reads back as `.integer`, for both.)
                let text = Data(payload.encodedData().utf8)
                switch payload {
                case .contentUpdated:
                    #expect(try event.data.decode(ContentChange.self) == WireFormat.decoder().decode(ContentChange.self, from: text))
                case .stateChanged(let change):
                    #expect(try event.data.decode(StateChange.self) == change)
                    #expect(try event.data.decode(StateChange.self) == WireFormat.decoder().decode(StateChange.self, from: text))
                default: break
                }
            }
        }
    }

    @Test(arguments: [
        #"{"content": {"state": 1}}"#,
        #"{"content": {"state": 1, "relevanceScore": "high"}, "timestamp": 1}"#,
        #"{"content": {"relevanceScore": 1}, "timestamp": 1}"#,
        #"{"content": {"state": 1, "staleDate": true}, "timestamp": 1}"#,
        #"{"content": [], "timestamp": 1}"#,
    ])
    func whatTheDecoderRefusesIsRefused(_ text: String) throws {
        let value = try JSONSyntax.parse(Array(text.utf8))
        #expect(throws: (any Error).self) { try WireFormat.decoder().decode(ContentChange.self, from: Data(text.utf8)) }
        #expect(throws: DecodingError.self) { try value.decode(ContentChange.self) }
    }

    @Test func aStateChangeNamingAnUnknownStateIsRefused() throws {
        let value: JSONValue = ["from": "active", "to": "asleep", "reason": "endedByApp", "at": 1]
        #expect(throws: DecodingError.self) { try value.decode(StateChange.self) }
    }
}

/// SplitMix64: random values that are the same on every run.
private struct Random {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func bool() -> Bool { next() & 1 == 1 }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }

    /// A delivery log line with any of its members, each present or not.
    mutating func deliveryReport() -> DeliveryReport {
        DeliveryReport(
            delivery: Int64(below(1_000_000)), event: pick(["start", "update", "end"]), outcome: pick(DeliveryReport.Outcome.allCases),
            attempt: below(9), target: bool() ? string() : nil, environment: bool() ? pick(APNsEnvironment.allCases) : nil,
            priority: bool() ? pick([5, 10]) : nil, priorityReason: bool() ? string() : nil, apnsId: bool() ? string() : nil,
            status: bool() ? pick([200, 400, 410, 429]) : nil, reason: bool() ? string() : nil, latencyMs: bool() ? abs(double()) : nil,
            nextAttemptAt: bool() ? date() : nil, coalescedInto: bool() ? Int64(below(1_000)) : nil, note: bool() ? string() : nil
        )
    }

    mutating func double() -> Double {
        switch below(6) {
        case 0: Double(Int64(bitPattern: next()) >> Int64(below(60)))
        case 1: Double(bitPattern: next() & 0x7FEF_FFFF_FFFF_FFFF) * (bool() ? 1 : -1)
        case 2: Double(below(1_000_000)) / pick([10, 100, 1000, 3, 7])
        case 3: pick([0, -0.0, 1e15, 1e16, 999_999_999_999_999.5, 0.1, 1e-7])
        case 4: 1_700_000_000 + Double(below(100_000_000)) / 1000
        default: Double(below(100))
        }
    }

    mutating func date() -> Date { Date(timeIntervalSince1970: abs(double()).truncatingRemainder(dividingBy: 253_402_300_799)) }

    mutating func string() -> String {
        let pieces = ["a", "Z", "é", "e\u{301}", "😀", "\"", "\\", "/", "\n", "\t", "\u{1}", "\u{1f}", "\u{7f}", "\u{2028}", "route", " ", "10", "9", "_", "\u{FF01}"]
        var text = ""
        for _ in 0..<below(8) { text += pick(pieces) }
        return text
    }

    mutating func value(depth: Int) -> JSONValue {
        switch below(depth > 0 ? 7 : 5) {
        case 0: return .null
        case 1: return .bool(bool())
        case 2: return .integer(Int64(bitPattern: next()) >> Int64(below(64)))
        case 3: return .number(double())
        case 4: return .string(string())
        case 5: return .array((0..<below(5)).map { _ in value(depth: depth - 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<below(6) { members[string()] = value(depth: depth - 1) }
            return .object(members)
        }
    }

    mutating func activity() -> Activity {
        var activity = Activity(
            id: UUID().uuidString, bundleId: "com.example.\(string())", deviceId: string(), attributesType: string(),
            attributes: value(depth: 2), content: ActivityContent(state: value(depth: 3), staleDate: bool() ? date() : nil, relevanceScore: double()),
            state: pick(ActivityState.allCases), style: bool() ? .standard : .transient,
            pushType: pick([nil, .token, .channel(string())]), pushToken: bool() ? string() : nil, key: bool() ? string() : nil,
            createdAt: date(), scheduledStart: bool() ? date() : nil,
            startAlert: bool() ? Alert(title: string(), body: string(), sound: bool() ? "default" : nil) : nil,
            startedAt: bool() ? date() : nil, autoEndAt: bool() ? date() : nil, endedAt: bool() ? date() : nil,
            dismissAt: bool() ? date() : nil, dismissedAt: bool() ? date() : nil, lastUpdateTimestamp: bool() ? date() : nil
        )
        activity.budgetedPushes = bool() ? (0..<below(4)).map { _ in date() } : nil
        activity.renew = bool() ? true : nil
        activity.renewUntil = bool() ? date() : nil
        activity.renewAt = bool() ? date() : nil
        activity.renewedBy = bool() ? UUID().uuidString : nil
        activity.renewedFrom = bool() ? UUID().uuidString : nil
        activity.source = pick([nil] + ActivitySource.allCases)
        return activity
    }
}
