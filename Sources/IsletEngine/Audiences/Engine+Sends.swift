import Foundation
import IsletCore

extension Engine {
    // MARK: Sends (docs/audiences.md)

    /// Phones a send's batch carries out in one transaction: few in the send's first second,
    /// so that its first cards leave at once (on PostgreSQL a phone's start is a score of round
    /// trips), then many, so that a commit's cost (a sync to disk) is shared by a thousand.
    static func sendBatch(of send: Send, now: Date) -> Int {
        now.timeIntervalSince(send.body.at ?? send.createdAt) < 1 ? 50 : 1_000
    }
    /// Users (or named ids) a send resolves in one transaction.
    static let sendResolvePage = 1_000

    /// Keeps a send and answers at once: it runs in the background (`SendRunner`), at its `at`
    /// or now. A start with `endAt` or `dismissAt` gets its follow-up, made with it: an end,
    /// then, of the phones it started.
    public func createSend(bundleId: BundleID, _ body: SendBody) async throws -> Send {
        try body.check(now: clock.now())
        return try await keep(body, bundleId: bundleId)
    }

    /// Keeps a checked send (and its follow-up) and wakes the runner.
    private func keep(_ body: SendBody, bundleId: BundleID) async throws -> Send {
        let send = try await write { tx in
            _ = try tx.requireApp(bundleId)
            if case .devices(let ids) = body.audience, let unknown = Set(ids).subtracting(try tx.knownDevices(Array(Set(ids)))).sorted().first {
                throw IsletError(.deviceNotFound, "audience.devices: no device \(unknown.prefix(100)).")
            }
            var send = Send(
                id: Send.newId(at: tx.now), bundleId: bundleId, status: (body.at.map { $0 > tx.now } ?? false) ? .scheduled : .running,
                body: body, createdAt: tx.now, updatedAt: tx.now
            )
            if body.action == .start, body.endAt != nil || body.dismissAt != nil {
                let end = SendBody(
                    action: .end, key: body.key, audience: .startedBy(send.id), at: body.endAt ?? body.dismissAt,
                    dismissalPolicy: body.dismissAt.map { body.endAt == nil ? .immediate : .after($0) }
                )
                let followUp = Send(id: Send.newId(at: tx.now), bundleId: bundleId, status: .scheduled, body: end, createdAt: tx.now, updatedAt: tx.now)
                try tx.putSend(followUp)
                send.followUp = followUp.id
            }
            try tx.putSend(send)
            return send
        }
        sendWake.notify(deadline: .distantPast)
        return send
    }

    /// A single start given `at` (`POST /v1/activities`): kept as a send to its one phone, under
    /// a key of its own, and carried out then (docs/audiences.md, "A single call at a time").
    public func scheduleStart(_ request: ActivityRequest, bundleId: BundleID, at: Date) async throws -> Send {
        try await createSend(bundleId: bundleId, SendBody(
            action: .start, key: "scheduled-\(UUID().uuidString.lowercased())", audience: .devices([request.deviceId]), at: at,
            attributesType: request.attributesType, attributes: request.attributes, content: request.content, alert: request.alert,
            pushType: request.pushType, style: request.style, start: request.start, renew: request.renew, renewUntil: request.renewUntil
        ))
    }

    /// A single update or end given `at` (`POST /v1/activities/{id}/update`, `…/end`): kept as a
    /// send to that activity (`owner`'s, when given) and carried out then.
    public func scheduleChange(_ input: Activity.Input, to id: ActivityID, owner: BundleID?, at: Date) async throws -> Send {
        // Refused now as the same call now would be, when the activity (as renewed) has ended.
        let activity = try await read { store in try store.loadActivity(following: id, owner: owner) }
        if !activity.state.isLive { throw (activity.state == .dismissed ? IgnoreReason.activityDismissed : .activityEnded).error }
        let body: SendBody =
            switch input {
            case .update(let update):
                SendBody(action: .update, key: id, audience: .activity(id), at: at, content: update.content, alert: update.alert, timestamp: update.timestamp)
            case .end(let end):
                SendBody(action: .end, key: id, audience: .activity(id), at: at, content: end.content, dismissalPolicy: end.dismissalPolicy, timestamp: end.timestamp)
            default:
                throw IsletError(.invalidRequest, "Only a start, an update or an end takes at.")
            }
        try body.checkChange(now: clock.now())
        return try await keep(body, bundleId: activity.bundleId)
    }

    /// One of an app's sends, with its counts, or `sendNotFound`.
    public func send(_ id: String, bundleId: BundleID) async throws -> Send {
        try await read { store in try Self.counted(try Self.requireSend(id, bundleId: bundleId, in: store), in: store) }
    }

    /// A page of an app's sends, in the order they were made.
    public func sends(bundleId: BundleID, page: PageRequest<String>) async throws -> Page<Send> {
        try await read { store in
            _ = try store.requireApp(bundleId)
            let found = try store.sends(bundleId: bundleId, after: page.after, limit: page.limit + 1)
            return page.page(of: try found.map { (item: try Self.counted($0, in: store), place: $0.id) })
        }
    }

    /// A page of a send's phones in order, only those with `outcome` when given.
    public func sendTargets(_ id: String, bundleId: BundleID, outcome: SendTargetOutcome?, page: PageRequest<Int64>) async throws -> Page<SendTarget> {
        try await read { store in
            _ = try Self.requireSend(id, bundleId: bundleId, in: store)
            let found = try store.sendTargets(sendId: id, outcome: outcome, after: page.after, limit: page.limit + 1)
            return page.page(of: found.map { (item: $0, place: $0.seq) })
        }
    }

    /// Cancels a send that is scheduled or running (a running one stops after its current
    /// batch); a start cancelled before it ran takes its follow-up with it. A send that ended
    /// is answered as it is.
    public func cancelSend(_ id: String, bundleId: BundleID) async throws -> Send {
        try await write { tx in
            var send = try Self.requireSend(id, bundleId: bundleId, in: tx)
            guard send.status == .scheduled || send.status == .running else { return try Self.counted(send, in: tx) }
            if send.status == .scheduled, let followUp = send.followUp, var next = try tx.send(followUp), next.status == .scheduled {
                Self.finish(&next, .cancelled, at: tx.now)
                try tx.putSend(next)
            }
            Self.finish(&send, .cancelled, at: tx.now)
            try tx.putSend(send)
            return try Self.counted(send, in: tx)
        }
    }

    /// Moves a scheduled send to another time (`sendNotScheduled` once it has begun).
    public func moveSend(_ id: String, bundleId: BundleID, to at: Date) async throws -> Send {
        guard WireFormat.isAcceptedDate(at.timeIntervalSince1970) else { throw IsletError(.invalidRequest, "at: not a date the API takes.") }
        let send = try await write { tx in
            var send = try Self.requireSend(id, bundleId: bundleId, in: tx)
            guard send.status == .scheduled else {
                throw IsletError(.invalidRequest, "Send \(id) is \(send.status.rawValue): only a scheduled send moves.")
            }
            if send.body.action == .start, let endAt = send.body.endAt, at >= endAt {
                throw IsletError(.invalidRequest, "at must come before the send's endAt.")
            }
            send.body.at = at
            send.updatedAt = tx.now
            try tx.putSend(send)
            return try Self.counted(send, in: tx)
        }
        sendWake.notify(deadline: .distantPast)
        return send
    }

    /// Carries out every due send as far as it goes now: resolves their audiences and reaches
    /// their phones, a transaction at a time; returns how many steps did something. The
    /// `SendRunner` calls it; a test that moves time by hand does too.
    @discardableResult
    public func runDueSends() async throws -> Int {
        var steps = 0
        while true {
            let due = try await read { [now = clock.now()] store in try store.dueSends(at: now, limit: 20) }
            var moved = false
            for send in due where try await step(send.id) {
                moved = true
                steps += 1
            }
            if !moved { return steps }
        }
    }

    /// One step of a send, in one transaction: made due (running), a page of its audience
    /// resolved, or a batch of its phones reached; finished once none waits. Whether it moved.
    func step(_ id: String) async throws -> Bool {
        // The send as it stands, read without its lock: batches on several nodes run side by
        // side; resolving and finishing lock it.
        guard let seen = try await read({ store in try store.send(id) }), seen.status == .scheduled || seen.status == .running else { return false }
        let rules = self.rules
        if seen.status == .scheduled || !seen.resolved {
            // A start's phones are reached between the pages of its audience, so the first ones
            // start at its time rather than once the whole audience is resolved; an update or end
            // is resolved whole first (it may go as one broadcast).
            if seen.status == .running, seen.body.action == .start, try await carryOutBatch(of: seen, rules: rules) > 0 { return true }
            return try await write { tx in
                guard var send = try tx.send(id), send.status == .scheduled || send.status == .running, send.body.at.map({ $0 <= tx.now }) ?? true
                else { return false }
                send.status = .running
                if !send.resolved {
                    guard try Self.resolvePage(of: &send, in: tx) else { return false }
                    if send.resolved, try Self.broadcastToChannel(send, rules: rules, in: tx) {
                        Self.finish(&send, .done, at: tx.now)
                    }
                }
                send.updatedAt = tx.now
                try tx.putSend(send)
                return true
            }
        }
        if try await carryOutBatch(of: seen, rules: rules) > 0 { return true }
        // None left to claim: done once none waits (another node may hold the last ones).
        return try await write { tx in
            guard var send = try tx.send(id), send.status == .running, send.resolved, !(try tx.sendHasWaitingTargets(id)) else { return false }
            Self.finish(&send, .done, at: tx.now)
            try tx.putSend(send)
            return true
        }
    }

    /// Reaches a batch of a send's waiting phones, claimed so that another node takes others,
    /// in one transaction; how many.
    private func carryOutBatch(of send: Send, rules: LifecycleRules) async throws -> Int {
        try await write { tx -> Int in
            let targets = try tx.waitingSendTargets(sendId: send.id, limit: Self.sendBatch(of: send, now: tx.now))
            // What every phone's start would read of the app, read once (a refusal here, such as
            // an app removed since, is each phone's, below).
            var context: StartContext?
            if send.body.action == .start, !targets.isEmpty {
                do { context = try StartContext.read(bundleId: send.bundleId, attributesType: send.body.attributesType ?? "", in: tx) } catch is IsletError {}
            }
            for var target in targets {
                (target.outcome, target.activityId, target.reason) = try Self.reach(target.deviceId, with: send, context: context, rules: rules, in: tx)
                target.doneAt = tx.now
                try tx.finishSendTarget(target)
            }
            return targets.count
        }
    }

    /// Resolves a page of a send's audience into its phones (each once); whether it may go on
    /// (a follow-up waits for the send whose phones it reaches to finish).
    private static func resolvePage(of send: inout Send, in tx: any Transaction) throws -> Bool {
        let page = sendResolvePage
        var devices: [DeviceID] = []
        var next: String?
        switch send.body.audience {
        case .users(let ids):
            let slice: [String]
            (slice, next) = namedPage(ids, cursor: send.resolveCursor, size: page)
            devices = try tx.devicesOfUsers(bundleId: send.bundleId, externalIds: slice)
        case .devices(let ids):
            // In the order given; devices removed since the send was made are left out.
            let slice: [DeviceID]
            (slice, next) = namedPage(ids, cursor: send.resolveCursor, size: page)
            let known = Set(try tx.knownDevices(slice))
            devices = slice.filter { known.contains($0) }
        case .tags(let tags):
            let users = try tx.appUsers(bundleId: send.bundleId, tags: tags, after: send.resolveCursor, limit: page)
            devices = users.flatMap(\.devices)
            next = users.count == page ? users.last?.externalId : nil
        case .all:
            let users = try tx.appUsers(bundleId: send.bundleId, tags: [:], after: send.resolveCursor, limit: page)
            devices = users.flatMap(\.devices)
            next = users.count == page ? users.last?.externalId : nil
        case .activity(let id):
            devices = try tx.activity(id).map { [$0.deviceId] } ?? []
        case .startedBy(let startId):
            guard let start = try tx.send(startId), start.status == .done || start.status == .cancelled else { return false }
            let targets = try tx.sendTargets(sendId: startId, outcome: .started, after: send.resolveCursor.flatMap { Int64($0) }, limit: page)
            devices = targets.map(\.deviceId)
            next = targets.count == page ? targets.last.map { String($0.seq) } : nil
        }
        send.counts.targeted += try tx.addSendTargets(sendId: send.id, devices: devices)
        send.resolveCursor = next
        send.resolved = next == nil
        return true
    }

    /// An update or end whose phones are exactly a broadcast channel's (iOS 18+; every live
    /// activity on the channel has the send's key, and each is on one of its phones) goes as
    /// one broadcast — `Engine.broadcast`, as the app's broadcast route sends — in the
    /// transaction that resolved its last page, before any batch could run (resolving holds the
    /// send). Every phone's outcome is written with it. Whether it went.
    private static func broadcastToChannel(_ send: Send, rules: LifecycleRules, in tx: any Transaction) throws -> Bool {
        let body = send.body
        guard body.action != .start, send.counts.targeted > 0,
            let first = try tx.sendTargets(sendId: send.id, outcome: nil, after: nil, limit: 1).first,
            let live = try tx.liveActivity(key: body.key, bundleId: send.bundleId, deviceId: first.deviceId),
            case .channel(let channelId) = live.pushType,
            let channel = try tx.channel(channelId, bundleId: send.bundleId)
        else { return false }
        let joined = try tx.liveActivities(channelId: channelId, bundleId: send.bundleId)
        guard joined.count == send.counts.targeted, joined.allSatisfy({ $0.key == body.key }) else { return false }
        let targets = try tx.sendTargets(sendId: send.id, outcome: nil, after: nil, limit: send.counts.targeted)
        guard targets.count == joined.count, Set(targets.map(\.deviceId)) == Set(joined.map(\.deviceId)) else { return false }
        let change: Activity.PushedChange =
            if body.action == .update, let content = body.content {
                .update(ContentUpdate(content: content, alert: body.alert, timestamp: body.timestamp))
            } else {
                .end(EndRequest(content: body.content, dismissalPolicy: body.dismissalPolicy ?? .default, timestamp: body.timestamp))
            }
        let outcomes = try broadcast(change, on: channel, rules: rules, in: tx)
        let byDevice = Dictionary(outcomes.map { ($0.activity.deviceId, $0) }, uniquingKeysWith: { first, _ in first })
        for var target in targets {
            let outcome = byDevice[target.deviceId]
            target.activityId = outcome?.activity.id
            if let ignored = outcome?.transition.ignored {
                (target.outcome, target.reason) = (.skipped, "ignored: \(ignored.rawValue)")
            } else {
                (target.outcome, target.reason) = (body.action == .update ? .updated : .ended, "by one broadcast on channel \(channelId)")
            }
            target.doneAt = tx.now
            try tx.finishSendTarget(target)
        }
        return true
    }

    /// The page of a named audience (users or devices) that starts at `cursor` (a position),
    /// and the cursor of the next, `nil` after the last.
    private static func namedPage(_ ids: [String], cursor: String?, size: Int) -> ([String], String?) {
        let from = min(Int(cursor ?? "0") ?? 0, ids.count)
        let to = min(from + size, ids.count)
        return (Array(ids[from..<to]), to < ids.count ? String(to) : nil)
    }

    /// What a send does on one phone, in its batch's transaction, through the same use cases as
    /// a single start, update or end: ActivityKit's refusal is the phone's `failed`, never the
    /// batch's.
    private static func reach(
        _ deviceId: DeviceID, with send: Send, context: StartContext?, rules: LifecycleRules, in tx: any Transaction
    ) throws -> (SendTargetOutcome, ActivityID?, String?) {
        let body = send.body
        // The one activity it names (as it stands after its renewals), or the phone's live one under the key.
        let live =
            if case .activity(let id) = body.audience {
                try tx.activity(id).map { try tx.liveEnd(of: $0) }
            } else {
                try tx.liveActivity(key: body.key, bundleId: send.bundleId, deviceId: deviceId).map { try tx.liveEnd(of: $0) }
            }
        do {
            switch body.action {
            case .start:
                if let live { return (.skipped, live.id, "an activity with the key is live on the phone") }
                let request = try body.activityRequest(deviceId: deviceId)
                let context = try context ?? StartContext.read(bundleId: send.bundleId, attributesType: request.attributesType, in: tx)
                let outcome = try start(request, bundleId: send.bundleId, key: body.key, rules: rules, in: tx, context: context)
                try tx.deliverStart(of: outcome.activity, alert: request.alert, context: context)
                return (.started, outcome.activity.id, nil)
            case .update, .end:
                guard var activity = live else { return (.skipped, nil, "no live activity with the key on the phone") }
                if case .channel = activity.pushType, let channelId = try tx.phoneActivity(activity.id)?.channelId {
                    // Such a card has no token of its own: only a broadcast reaches it (above, when the send's phones are the channel's).
                    return (
                        .failed, activity.id,
                        "not sent: the activity joined channel \(channelId), whose changes reach the phone only by broadcast, and this send's phones are not all of the channel's"
                    )
                }
                let input: Activity.Input =
                    if body.action == .update, let content = body.content {
                        .update(ContentUpdate(content: content, alert: body.alert, timestamp: body.timestamp))
                    } else {
                        .end(EndRequest(content: body.content, dismissalPolicy: body.dismissalPolicy ?? .default, timestamp: body.timestamp))
                    }
                let (transition, _) = try tx.change(&activity, input, rules: rules)
                try tx.deliverChange(input, transition: transition, of: activity)
                if let ignored = transition.ignored { return (.skipped, activity.id, "ignored: \(ignored.rawValue)") }
                return (body.action == .update ? .updated : .ended, activity.id, nil)
            }
        } catch let refusal as IsletError {
            return (.failed, live?.id, "\(refusal.reason.rawValue): \(refusal.message)")
        }
    }

    private static func requireSend(_ id: String, bundleId: BundleID, in store: any StoreReading) throws -> Send {
        _ = try store.requireApp(bundleId)
        guard let send = try store.send(id), send.bundleId == bundleId else {
            throw IsletError(.sendNotFound, "\(bundleId) has no send \(id.prefix(64)).")
        }
        return send
    }

    /// The send with its phones' outcomes counted.
    private static func counted(_ send: Send, in store: any StoreReading) throws -> Send {
        var send = send
        let targeted = send.counts.targeted
        send.counts = SendCounts()
        send.counts.targeted = targeted
        for (outcome, phones) in try store.sendOutcomeCounts(send.id) { send.counts.count(outcome, phones) }
        return send
    }

    private static func finish(_ send: inout Send, _ status: SendStatus, at now: Date) {
        send.status = status
        send.updatedAt = now
        send.finishedAt = now
    }
}
