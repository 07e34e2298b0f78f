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
                default: continue
                }
                #expect(payload.encodedData() == reference, "\(payload.type)")
            }
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
