import Foundation
import IsletCore
import Testing

/// The wire contract: every body the client encodes is one the server decodes strictly into the
/// same value, every answer type round-trips, and the events written by hand read back as the
/// `Event` type says.
@Suite("Wire contract")
struct WireContractTests {
    private func strict<T: Decodable>(_ type: T.Type, _ data: Data) throws(IsletError) -> T {
        try decodeRequest(type, String(decoding: data, as: UTF8.self))
    }

    private func roundTrip<T: Codable & Equatable>(_ value: T) throws {
        let decoded = try strict(T.self, try WireFormat.encoder().encode(value))
        #expect(decoded == value, "\(T.self)")
    }

    private static let request = ActivityRequest(
        attributesType: "RideAttributes", attributes: ["route": "Loop", "laps": 3],
        content: ActivityContent(state: ["speed": 27.5, "note": "a \"quoted\" ☀︎"], staleDate: Date(timeIntervalSince1970: 1_800_000_000.5), relevanceScore: 50),
        pushType: .channel("ch+1"), style: .transient, alert: Alert(title: "Ride", body: "Starting", sound: "chime"),
        start: Date(timeIntervalSince1970: 1_800_000_100), deviceId: "phone-2"
    )

    @Test func everyRequestBodyRoundTripsThroughTheStrictDecoder() throws {
        try roundTrip(StartActivityBody(request: Self.request, bundleId: "com.example.bike"))
        try roundTrip(StartActivityBody(request: ActivityRequest(attributesType: "T", content: ActivityContent(state: [:]))))
        try roundTrip(StartOrUpdateBody(request: Self.request, bundleId: "com.example.bike", timestamp: Date(timeIntervalSince1970: 1_800_000_000), end: .after(Date(timeIntervalSince1970: 1_800_000_900))))
        try roundTrip(StartOrUpdateBody(request: Self.request, end: .immediate))
        try roundTrip(StartOrUpdateBody(request: Self.request))
        try roundTrip(ContentUpdate(content: ActivityContent(state: ["a": [1, 2]]), alert: Alert(title: "t", body: "b"), timestamp: Date(timeIntervalSince1970: 1)))
        try roundTrip(EndRequest(content: ActivityContent(state: [:]), dismissalPolicy: .default, timestamp: Date(timeIntervalSince1970: 2)))
        try roundTrip(EndRequest(dismissalPolicy: .after(Date(timeIntervalSince1970: 3))))
        try roundTrip(CreateAppBody(bundleId: "com.example.bike", name: "Bikes"))
        try roundTrip(CreateAppBody(bundleId: "com.example.bike"))
        try roundTrip(UpdateAppBody(strictPushes: true))
        try roundTrip(UpdateAppBody())
        try roundTrip(CreateDeviceBody(id: "phone-2", name: "Phone"))
        try roundTrip(SettingsBody(bundleId: "com.example.bike", activitiesEnabled: false, frequentUpdates: true))
        try roundTrip(ProviderKeyBody(keyId: "KEY1234567", teamId: "TEAM123456", publicKey: "-----BEGIN PUBLIC KEY-----\n…"))
        try roundTrip(ProviderKeyBody(keyId: "KEY1234567", teamId: "TEAM123456", privateKey: "-----BEGIN PRIVATE KEY-----\n…"))
        try roundTrip(ActivityTypeBody(attributes: ["route": "string"], contentState: ["speed": "number"]))
        try roundTrip(CreateChannelBody(storagePolicy: 1))
    }

    @Test func everyAnswerTypeRoundTrips() throws {
        func roundTrip<T: Codable & Equatable>(_ value: T) throws {
            #expect(try WireFormat.decoder().decode(T.self, from: WireFormat.encoder().encode(value)) == value)
        }
        try roundTrip(CreatedApp(app: App(bundleId: "com.example.bike", name: "Bikes", createdAt: Date(timeIntervalSince1970: 5)), apiKey: "islet_app_x"))
        try roundTrip(IssuedDeviceKey(deviceId: "default", key: "islet_device_x"))
        try roundTrip(ErrorBody(IsletError(.activityEnded, "The activity has ended.")))
        let listing = Listing("devices", [Device(id: "default", name: "Default", createdAt: Date(timeIntervalSince1970: 5))])
        let decoded = try WireFormat.decoder().decode(Listing<Device>.self, from: WireFormat.encoder().encode(listing))
        #expect(decoded.name == "devices" && decoded.items == listing.items)
        #expect(try WireFormat.string(ErrorBody(IsletError(.denied, "no"))) == #"{"error":{"message":"no","reason":"denied"}}"#)
    }

    @Test func aFieldNoContainerAskedForIsUnknownAndNamedWithWhatIsTaken() throws {
        let cases: [(String, String)] = [
            (#"{"attributesType":"T","content":{"state":{}},"stateDate":1}"#,
             #"Unknown field "stateDate" in the body; expected one of: alert, attributes, attributesType, bundleId, content, device, pushType, renew, renewUntil, source, start, style."#),
            (#"{"attributesType":"T","content":{"state":{},"stale":1}}"#,
             #"Unknown field "stale" in content; expected one of: relevanceScore, staleDate, state."#),
            (#"{"attributesType":"T","content":{"state":{}},"alert":{"title":"a","body":"b","loud":true}}"#,
             #"Unknown field "loud" in alert; expected one of: body, sound, title."#),
        ]
        for (body, message) in cases {
            let error = #expect(throws: IsletError.self) { try strict(StartActivityBody.self, Data(body.utf8)) }
            #expect(error?.reason == .invalidRequest)
            #expect(error?.message == message)
        }
    }

    @Test func aJSONValueFieldIsTakenWholeAndNullMeansAbsent() throws {
        let body = try strict(StartActivityBody.self, Data(#"{"attributesType":"T","attributes":{"anything":{"x":[1,{"y":null}]}},"content":{"state":{"deep":{"z":1}},"staleDate":null},"bundleId":null}"#.utf8))
        #expect(body.request.attributes == ["anything": ["x": [1, ["y": .null]]]])
        #expect(body.request.content.staleDate == nil)
        #expect(body.bundleId == nil)
    }

    @Test func numbersAreReadExactlyOrRefusedNamingTheField() throws {
        #expect(try strict(CreateChannelBody.self, Data(#"{"storagePolicy": 1.0}"#.utf8)).storagePolicy == 1)
        for bad in ["1.5", "1e30", "\"1\"", "true", "null"] {
            let error = #expect(throws: IsletError.self) { try strict(CreateChannelBody.self, Data(#"{"storagePolicy": \#(bad)}"#.utf8)) }
            #expect(error?.reason == .invalidRequest)
            #expect(error?.message.contains("storagePolicy") == true, "\(bad): \(error?.message ?? "")")
        }
        let missing = #expect(throws: IsletError.self) { try strict(CreateChannelBody.self, Data("{}".utf8)) }
        #expect(missing?.message == "Missing field storagePolicy.")
    }

    @Test func theHandWrittenEventJSONIsTheEventTypesForEveryPayload() throws {
        let when = Date(timeIntervalSince1970: 1_800_000_000.25)
        let activity = Activity(
            id: "0F8FAD5B-D9CB-469F-A165-70867728950E", bundleId: "com.example.bike", deviceId: "phone \"2\"",
            attributesType: "RideAttributes", attributes: ["route": "Loop"], content: ActivityContent(state: ["speed": 1]),
            state: .active, style: .standard, pushType: .token, pushToken: String(repeating: "ab", count: 32), key: nil,
            createdAt: when, scheduledStart: nil, startAlert: nil, startedAt: when, autoEndAt: when.addingTimeInterval(8 * 3600)
        )
        let payloads: [EventPayload] = [
            .started(activity),
            .contentUpdated(ContentChange(content: ActivityContent(state: ["speed": 2], staleDate: when, relevanceScore: 5), timestamp: when)),
            .stateChanged(StateChange(from: .active, to: .ended, reason: .endedByApp, at: when)),
            .alert(Alert(title: "Almost", body: "there", sound: nil)),
            .updateIgnored(IgnoredUpdate(reason: .olderTimestamp, action: "update", content: nil, timestamp: when, lastUpdateTimestamp: when)),
            .pushTokenUpdated(PushTokenChange(pushToken: "cd", kind: .pushToStart)),
            .settingsChanged(AppSettings(bundleId: "com.example.bike", deviceId: "default", activitiesEnabled: false)),
            .layoutChanged(LayoutChange(attributesType: "RideAttributes", revision: 3)),
            .delivery(DeliveryReport(
                delivery: 9, event: "update", outcome: .retrying, attempt: 2, target: "abcd…ef01", environment: .development,
                priority: 5, priorityReason: "budget", apnsId: "0F8FAD5B-D9CB-469F-A165-70867728950E", status: 503,
                reason: "ServiceUnavailable", latencyMs: 12.5, nextAttemptAt: when, note: "again in 2 s"
            )),
            .budgetExhausted(BudgetExhaustion(perHour: 12, spent: 12, nextRefillAt: when)),
        ]
        #expect(Set(payloads.map(\.type)) == Set(EventType.allCases))
        for (index, payload) in payloads.enumerated() {
            for activityId in [activity.id, nil] as [ActivityID?] {
                let encoded = EncodedEvent(
                    id: EventID(index + 1), type: payload.type, time: when, bundleId: "com.example.\"bike\"", deviceId: "phone ☀︎",
                    activityId: activityId, dataJSON: payload.encodedData()
                )
                let expected = Event(
                    id: EventID(index + 1), type: payload.type, time: when, bundleId: "com.example.\"bike\"", deviceId: "phone ☀︎",
                    activityId: activityId,
                    data: try WireFormat.decoder().decode(JSONValue.self, from: Data(payload.encodedData().utf8))
                )
                #expect(try encoded.decoded() == expected, "\(payload.type)")
                // The bytes Codable would write, as a value: the same document.
                let written = try WireFormat.decoder().decode(JSONValue.self, from: WireFormat.encoder().encode(expected))
                #expect(try WireFormat.decoder().decode(JSONValue.self, from: Data(encoded.json.utf8)) == written)
            }
        }
    }
}
