import Foundation
import HTTPTypes
import IsletAPNs
import IsletCore

extension FuzzTarget {
    /// A push as the APNs endpoint reads it: `name: value` header lines, a blank line, the
    /// payload. The headers go through `PushHeaders`' device and broadcast checks, which accept
    /// them with values in range or refuse them with a 4xx reason; the payload through
    /// `LiveActivityPayload.parse`, whose update or end is then pushed to a live activity and
    /// to an ended one, and whose start is requested, under `LifecycleCheck`'s invariants. The
    /// same body, read as channel management's (`ChannelConfiguration`), is a policy of 0 or 1
    /// that reads back from what the sender would write, or refused.
    public static let apnsPush = FuzzTarget(name: "apns-push") { data throws(FuzzFailure) in
        let (fields, body) = PushRequestText.split(data)
        try checkDeviceHeaders(fields)
        try checkBroadcastHeaders(fields)
        if let configuration = ChannelConfiguration(body: body) {
            try expect([0, 1].contains(configuration.messageStoragePolicy), "a channel created with policy \(configuration.messageStoragePolicy)")
            try expect(ChannelConfiguration(body: Data(configuration.body.utf8)) == configuration, "\(configuration.body) does not read back")
        }
        let payload: LiveActivityPayload
        do throws(APNsError) {
            payload = try LiveActivityPayload.parse(body, device: "fuzz-device")
        } catch {
            try expect(error.statusCode == 400 && !error.reason.isEmpty, "a payload refused with \(error)")
            return
        }
        try deliver(payload)
    }
}

/// Splits a push written as text into its header fields and its body.
enum PushRequestText {
    static func split(_ data: Data) -> (HTTPFields, Data) {
        let bytes = [UInt8](data)
        var end = bytes.count
        var bodyStart = bytes.count
        for index in bytes.indices where bytes[index] == 0x0A {
            if index + 1 < bytes.count, bytes[index + 1] == 0x0A {
                (end, bodyStart) = (index, index + 2)
                break
            }
            if index + 2 < bytes.count, bytes[index + 1] == 0x0D, bytes[index + 2] == 0x0A {
                (end, bodyStart) = (index, index + 3)
                break
            }
        }
        var fields = HTTPFields()
        for line in bytes[..<end].split(separator: 0x0A) {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
                let name = HTTPField.Name(String(decoding: line[..<colon], as: UTF8.self))
            else { continue }
            var value = line[(colon + 1)...]
            while value.last == 0x0D { value = value.dropLast() }
            fields.append(HTTPField(name: name, value: value))
        }
        return (fields, Data(bytes[bodyStart...]))
    }
}

/// The headers `check` accepts, or `nil` when it refuses them as APNs does: with a 4xx reason.
private func accepted(_ kind: String, by check: () throws(APNsError) -> PushHeaders) throws(FuzzFailure) -> PushHeaders? {
    do throws(APNsError) {
        return try check()
    } catch {
        try expect((400..<500).contains(error.statusCode) && !error.reason.isEmpty, "\(kind) headers refused with \(error)")
        return nil
    }
}

private func checkDeviceHeaders(_ fields: HTTPFields) throws(FuzzFailure) {
    guard let headers = try accepted("device", by: { () throws(APNsError) in try PushHeaders.device(fields) }) else { return }
    try expect(UUID(uuidString: headers.requestId) != nil, "accepted apns-id \(headers.requestId), not a UUID")
    try expect([1, 5, 10].contains(headers.priority), "accepted priority \(headers.priority)")
    try expect((headers.expiration ?? 0) >= 0, "accepted expiration \(headers.expiration ?? 0)")
    try expect((headers.collapseId?.utf8.count ?? 0) <= 64, "accepted a collapse id over 64 bytes")
    try expect(!(headers.topicBundleId ?? "").isEmpty, "accepted a device push with no bundle id in its topic")
}

private func checkBroadcastHeaders(_ fields: HTTPFields) throws(FuzzFailure) {
    guard let headers = try accepted("broadcast", by: { () throws(APNsError) in try PushHeaders.broadcast(fields) }) else { return }
    try expect(headers.channelId.flatMap { Data(base64Encoded: $0) } != nil, "accepted a broadcast without a base64 channel id")
    try expect((headers.expiration ?? -1) >= 0, "accepted a broadcast without an expiration")
    try expect([1, 5, 10].contains(headers.priority), "accepted priority \(headers.priority)")
}

/// Hands a parsed payload to the rules, as the endpoint does: its dates are ones the server
/// accepts (`WireFormat.dateRange`), or it was not delivered.
private func deliver(_ payload: LiveActivityPayload) throws(FuzzFailure) {
    let dates: [Date?] =
        switch payload.action {
        case .update(let update): [update.timestamp, update.content.staleDate]
        case .end(let end): [end.timestamp, end.content?.staleDate, end.dismissalPolicy.date]
        case .start(let start): [start.timestamp, start.request.content.staleDate]
        case .undeliverable: []
        }
    for case let seconds? in (dates + [payload.timestamp]).map({ $0?.timeIntervalSince1970 }) {
        try expect(WireFormat.isAcceptedDate(seconds), "a push was parsed with the date \(seconds)")
    }
    let rules = LifecycleRules()
    let now = Date(timeIntervalSince1970: 1_750_000_000)
    var check = LifecycleCheck(rules: rules)
    let change: Activity.PushedChange
    switch payload.action {
    case .update(let update):
        check.observe(now: now, numbers: numbers(of: update.content) + [update.timestamp?.timeIntervalSince1970 ?? 0])
        change = .update(update)
    case .end(let end):
        var dismissal = 0.0
        if case .after(let date) = end.dismissalPolicy { dismissal = date.timeIntervalSince1970 }
        check.observe(now: now, numbers: (end.content.map(numbers) ?? []) + [end.timestamp?.timeIntervalSince1970 ?? 0, dismissal])
        change = .end(end)
    case .start(let start):
        check.observe(now: now, numbers: numbers(of: start.request.content))
        let occupancy = Occupancy(activitiesEnabled: true, appActivities: 0, deviceActivities: 0)
        let started: (Activity, Transition)
        do throws(IsletError) {
            started = try Activity.request(
                start.request, id: "pushed", bundleId: "com.example.fuzz", pushToken: "ab", occupancy: occupancy, now: now,
                rules: rules
            )
        } catch {
            try expect(!error.message.isEmpty, "a pushed start refused with \(error.reason.rawValue) and no message")
            return
        }
        try check.started(started.0, started.1, request: start.request, now: now)
        return
    case .undeliverable(_, let detail):
        try expect(!detail.isEmpty, "an undeliverable payload with no detail")
        return
    }
    // To a live activity, then to the same once it has ended.
    let request = ActivityRequest(attributesType: "FuzzAttributes", content: ActivityContent(state: ["step": 0]), pushType: .token)
    guard
        var activity = try? Activity.request(
            request, id: "pushed", bundleId: "com.example.fuzz", pushToken: "ab",
            occupancy: Occupancy(activitiesEnabled: true, appActivities: 0, deviceActivities: 0),
            now: now.addingTimeInterval(-600), rules: rules
        ).0
    else { throw FuzzFailure("the fixed activity does not start") }
    for _ in 0..<2 {
        let before = activity
        let input = Activity.Input.push(change, Activity.PushDelivery(budgetPerHour: rules.pushBudgetPerHour))
        let transition: Transition
        do throws(IsletError) {
            transition = try activity.handle(input, now: now, rules: rules)
        } catch {
            throw FuzzFailure("a push was refused (\(error)); a device only applies or drops pushes")
        }
        try check.handled(input, before: before, after: activity, transition: transition, now: now)
        do throws(IsletError) {
            _ = try activity.handle(.end(EndRequest()), now: now, rules: rules)
        } catch {
            throw FuzzFailure("a plain end was refused after a push: \(error)")
        }
    }
}

private func numbers(of content: ActivityContent) -> [Double] {
    [content.staleDate?.timeIntervalSince1970 ?? 0, content.relevanceScore]
}
