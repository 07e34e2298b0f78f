import Foundation
import IsletClient
import IsletCore

/// Prints results as tables for people or JSON for scripts.
struct Output {
    let json: Bool

    /// Writes `value` as JSON, a line (`Terminal.json`).
    func encoded(_ value: some Encodable) {
        guard let data = try? WireFormat.encoder().encode(value) else { return }
        FileHandle.standardOutput.write(Data((Terminal.json(String(decoding: data, as: UTF8.self)) + "\n").utf8))
    }

    func activities(_ activities: [Activity]) {
        if json { return encoded(["activities": activities]) }
        if activities.isEmpty { return Terminal.line("No activities.") }
        table(
            ["ID", "APP", "TYPE", "STATE", "DEVICE", "CONTENT"],
            activities.map { activity in
                [activity.id, activity.bundleId, activity.attributesType, activity.state.rawValue, activity.deviceId,
                 Self.compact(activity.content.state, limit: 48)]
            }
        )
    }

    func activity(_ activity: Activity) {
        if json { return encoded(activity) }
        var rows: [(String, String)] = [
            ("id", activity.id), ("app", activity.bundleId), ("device", activity.deviceId),
            ("type", activity.attributesType), ("state", activity.state.rawValue),
            ("attributes", Self.compact(activity.attributes, limit: 200)),
            ("content", Self.compact(activity.content.state, limit: 200)),
            ("relevance", String(format: "%g", activity.content.relevanceScore)),
        ]
        let dates: [(String, Date?)] = [
            ("stale at", activity.content.staleDate), ("starts at", activity.scheduledStart),
            ("started at", activity.startedAt), ("ends by", activity.autoEndAt), ("ended at", activity.endedAt),
            activity.dismissedAt == nil ? ("dismissed by", activity.dismissAt) : ("dismissed at", activity.dismissedAt),
        ]
        rows += dates.compactMap { name, date in date.map { (name, Self.time($0)) } }
        if let renewAt = activity.renewAt { rows.append(("renewal at", Self.time(renewAt))) }
        if let until = activity.renewUntil { rows.append(("renewed until", Self.time(until))) }
        if let from = activity.renewedFrom { rows.append(("renews", from)) }
        if let by = activity.renewedBy { rows.append(("renewed by", by)) }
        if let key = activity.key { rows.append(("key", key)) }
        if let token = activity.pushToken { rows.append(("push token", token)) }
        let width = rows.map(\.0.count).max() ?? 0
        for (name, value) in rows {
            Terminal.line(name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + Terminal.field(value))
        }
    }

    func events(_ events: [Event]) {
        if json { return encoded(["events": events]) }
        for event in events { self.event(event) }
    }

    /// One event as a line: time, id, type, activity and what happened.
    func event(_ event: Event) {
        if json { return encoded(event) }
        let activity = event.activityId.map { String($0.prefix(8)) } ?? "-"
        let type = event.type.rawValue.padding(toLength: 16, withPad: " ", startingAt: 0)
        let number = "#\(event.id)"
        let id = number.padding(toLength: max(number.count, 5), withPad: " ", startingAt: 0)
        Terminal.line("\(Self.time(event.time))  \(id)  \(type)  \(activity)  \(Terminal.field(Self.summary(of: event)))")
    }

    /// How many activities a command with `--all` acted on: `{"ended": 3}` in JSON.
    func count(_ count: Int, _ verb: String) {
        if json {
            encoded([verb: count])
        } else {
            Terminal.line("\(count) \(count == 1 ? "activity" : "activities") \(verb).")
        }
    }

    /// A line on the standard error that does not stop the command.
    func warn(_ text: String) {
        Terminal.error("warning: \(text)")
    }

    func fail(_ error: ClientError, key: (key: String?, source: KeySource)) {
        if case .unreachable = error {
            // One line: which server, why, and the likely cause.
            return Terminal.error("error: \(error) — is `islet serve` running?")
        }
        if json, case .refused(_, let refusal) = error {
            struct Body: Encodable {
                struct Detail: Encodable { var reason: String; var message: String }
                var error: Detail
            }
            encoded(Body(error: .init(reason: refusal.reason.rawValue, message: refusal.message)))
        } else {
            Terminal.error("error: \(error)")
        }
        if case .refused(let status, _) = error, status == 401 || status == 403, let hint = Self.keyHint(status: status, key) {
            Terminal.error("hint: \(hint)")
        }
    }

    /// What a 401 or 403 says about the key that was sent: its source and kind, and what to do.
    static func keyHint(status: Int, _ key: (key: String?, source: KeySource)) -> String? {
        guard let sent = key.key else {
            if case .none(let why?) = key.source { return "no key was sent: \(why)." }
            return "no key was sent; pass --key, set ISLET_KEY, or run on the server's machine, where the CLI reads the admin key in the data directory (--data)."
        }
        if status == 401 {
            return "sent \(key.source.description) (\(KeySource.kind(of: sent)), by its prefix), which this server does not know."
        }
        let what = "sent \(key.source.description) (\(KeySource.kind(of: sent)))"
        switch key.source {
        case .option, .environment:
            return "\(what); an explicit key always wins. For what only the admin key may do, on the server's machine run without it (`ISLET_KEY= islet …`) and the CLI sends the admin key in the data directory."
        default:
            return "\(what)."
        }
    }

    /// Rows under a header, in columns; every cell on one line (`Terminal.field`).
    func table(_ header: [String], _ rows: [[String]]) {
        let rows = rows.map { $0.map(Terminal.field) }
        let widths = header.indices.map { column in
            ([header[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0
        }
        for row in [header] + rows {
            let cells = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }
            Terminal.line(cells.joined(separator: "  "))
        }
    }

    static func compact(_ value: JSONValue, limit: Int) -> String {
        let text = (try? WireFormat.string(value)) ?? "?"
        return text.count > limit ? String(text.prefix(limit - 1)) + "…" : text
    }

    static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }

    static func summary(of event: Event) -> String {
        let data = event.data
        switch event.type {
        case .started:
            let renews = data["renewedFrom"].map { " (renews \(string($0)))" } ?? ""
            return "\(event.bundleId) \(string(data["attributesType"]))\(renews)"
        case .contentUpdated:
            return data["content"]?["state"].map { compact($0, limit: 80) } ?? ""
        case .stateChanged:
            return "\(string(data["from"])) → \(string(data["to"])) (\(string(data["reason"])))"
        case .alert:
            return "\(string(data["title"])): \(string(data["body"]))"
        case .updateIgnored:
            // The detail (which field did not fit) when there is more to say than the reason's name.
            let reason = string(data["reason"])
            let message = string(data["message"])
            let generic = IgnoreReason(rawValue: reason)?.error.message
            let detail = message.isEmpty || message == generic ? "" : " — \(message)"
            return "\(string(data["action"])) ignored: \(reason)\(detail)"
        case .pushTokenUpdated:
            // The phone's own (its app reported it) are said so: Islet issued the others.
            let kind = PushTokenChange.Kind(rawValue: string(data["kind"]))
            return "\(string(data["pushToken"]))\(kind.map { $0.isReported ? " (the phone's \($0.webhookKind) token)" : "" } ?? "")"
        case .settingsChanged:
            return "\(event.bundleId) on \(event.deviceId): activities \(data["activitiesEnabled"] == true ? "on" : "off"), frequent updates \(data["frequentUpdates"] == true ? "on" : "off")"
        case .delivery:
            let outcome = string(data["outcome"])
            var text = "#\(string(data["delivery"])) \(string(data["event"])) \(outcome)"
            if let status = data["status"], status != .null { text += " \(string(status))\(data["reason"].map { $0 == .null ? "" : " \(string($0))" } ?? "")" }
            if let priority = data["priority"], priority != .null { text += " p\(string(priority))" }
            if let target = data["target"], target != .null { text += " → \(string(target))" }
            if let note = data["note"], note != .null { text += " — \(string(note))" }
            return text
        case .layoutChanged:
            let revision = data["revision"]
            return revision == 0
                ? "\(string(data["attributesType"])) layout removed (default card)"
                : "\(string(data["attributesType"])) layout revision \(string(revision))"
        case .budgetExhausted:
            let refill = data["nextRefillAt"]?.numberValue.map { time(Date(timeIntervalSince1970: $0)) } ?? "?"
            return "\(event.bundleId) on \(event.deviceId): \(string(data["spent"])) of \(string(data["perHour"])) priority-10 pushes spent this hour; the next comes back at \(refill)"
        }
    }

    private static func string(_ value: JSONValue?) -> String {
        if case .string(let text) = value { return text }
        return value.map { compact($0, limit: 40) } ?? ""
    }
}
