import Foundation

/// What a lifecycle step did: the events to record, in order, and whether the input was ignored.
public struct Transition: Hashable, Sendable {
    /// The events the step produced, oldest first.
    public var payloads: [EventPayload] = []
    /// Why the input was ignored, if it was. Ignoring is recorded in `payloads` too.
    public var ignored: IgnoreReason?

    /// An empty transition.
    public init() {}
}

extension Activity {
    /// Something that happens to a running activity.
    public enum Input: Hashable, Sendable {
        /// The app sends new content.
        case update(ContentUpdate)
        /// The app ends the activity.
        case end(EndRequest)
        /// A person dismisses the activity from a display.
        case userDismissal
        /// A person turns Live Activities off for the app on the device.
        case appDisabled
        /// Time passes: deadlines that are due take effect.
        case advance
        /// A push reaches the device: applied as the device would, or dropped with a reason.
        case push(PushedChange, PushDelivery)
        /// Islet renewed it: the successor, already started, takes its place, and it ends and
        /// leaves the Lock Screen at once (docs/renewal.md).
        case renewed(by: ActivityID)
        /// A real phone's app reports what ActivityKit told it and Islet could not see: the
        /// person dismissed the card, or the activity ended on the phone. Said again, or after
        /// the fact (an end reported once dismissed), it changes nothing.
        case phoneReport(PhoneReportState)
    }

    /// What a push asks of a running activity. Its `Codable` form is how a broadcast
    /// channel keeps its most recent message: `{"update": {…}}` or `{"end": {…}}`.
    public enum PushedChange: Codable, Hashable, Sendable {
        /// `"event": "update"`.
        case update(ContentUpdate)
        /// `"event": "end"`.
        case end(EndRequest)
    }

    /// How a push arrives: what the device checks before it applies one.
    public struct PushDelivery: Hashable, Sendable {
        /// The hourly budget the push counts against; `nil` when it does not count (priority 5,
        /// broadcasts). See `LifecycleRules.pushBudget(priority:frequentUpdates:)`.
        public var budgetPerHour: Int?

        /// Creates a delivery.
        public init(budgetPerHour: Int?) {
            self.budgetPerHour = budgetPerHour
        }
    }

    /// Starts a new activity by ActivityKit's rules, or refuses it with the reason iOS would give.
    ///
    /// - Parameters:
    ///   - request: What the app asks for.
    ///   - id: The new activity's identifier.
    ///   - bundleId: The app asking.
    ///   - key: The caller's stable key, for start-or-update by key.
    ///   - pushToken: The push token to issue when the request asks for one.
    ///   - occupancy: What the app and the device already hold.
    ///   - now: The current time.
    ///   - rules: The limits in force.
    ///   - type: The activity type's registered shapes, if any: payloads must fit them.
    ///   - predecessor: The activity this one renews, if it does: it carries on from its last
    ///     update's timestamp, so an update older than one already applied stays ignored.
    /// - Returns: The activity and the events of its start.
    public static func request(
        _ request: ActivityRequest, id: ActivityID, bundleId: BundleID, key: String? = nil, pushToken: String?,
        occupancy: Occupancy, now: Date, rules: LifecycleRules, type: ActivityType? = nil, renewing predecessor: Activity? = nil
    ) throws(IsletError) -> (Activity, Transition) {
        try request.validate()
        if let start = request.start, start.timeIntervalSince(now) > rules.maxScheduleLead {
            throw IsletError(
                .startTooFarAhead,
                "start is \(DurationText.text(start.timeIntervalSince(now))) from now; an activity may be scheduled at most \(DurationText.text(rules.maxScheduleLead)) ahead (lifecycle.maxScheduleLead)."
            )
        }
        if let mismatch = type?.attributes?.mismatch(in: request.attributes, at: "attributes") {
            throw IsletError(.attributesMismatch, "\(mismatch) (activity type \(request.attributesType))")
        }
        try checkShape(of: request.content, type: type)
        guard occupancy.activitiesEnabled else {
            throw IsletError(.denied, "Live Activities are turned off for \(bundleId) on device \(request.deviceId).")
        }
        try rules.checkPayloadSize(attributes: request.attributes, state: request.content.state)
        guard occupancy.appActivities < rules.maxActivitiesPerApp else {
            throw IsletError(
                .targetMaximumExceeded,
                "\(bundleId) already has \(occupancy.appActivities) live activities on device \(request.deviceId); the limit is \(rules.maxActivitiesPerApp)."
            )
        }
        guard occupancy.deviceActivities < rules.maxActivitiesPerDevice else {
            throw IsletError(
                .globalMaximumExceeded,
                "Device \(request.deviceId) already holds \(occupancy.deviceActivities) live activities; the limit is \(rules.maxActivitiesPerDevice)."
            )
        }
        let scheduledStart = request.start.flatMap { $0 > now ? $0 : nil }
        if scheduledStart != nil, request.alert == nil {
            throw IsletError(.invalidRequest, "A scheduled start needs an alert, as ActivityKit's request(…start:) does.")
        }
        var activity = Activity(
            id: id, bundleId: bundleId, deviceId: request.deviceId, attributesType: request.attributesType,
            attributes: request.attributes, content: request.content, state: scheduledStart == nil ? .active : .pending,
            style: request.style, pushType: request.pushType, pushToken: request.pushType == .token ? pushToken : nil,
            key: key, createdAt: now, scheduledStart: scheduledStart, startAlert: scheduledStart == nil ? nil : request.alert,
            startedAt: scheduledStart == nil ? now : nil,
            autoEndAt: scheduledStart == nil ? now.addingTimeInterval(rules.maxActiveDuration) : nil
        )
        activity.source = request.source
        if request.renew {
            activity.renew = true
            activity.renewUntil = request.renewUntil
            activity.renewAt = scheduledStart == nil ? rules.renewal(startedAt: now, until: request.renewUntil) : nil
        }
        if let predecessor {
            activity.renewedFrom = predecessor.id
            activity.lastUpdateTimestamp = predecessor.lastUpdateTimestamp
        }
        var transition = Transition()
        transition.payloads.append(.started(activity))
        if let token = activity.pushToken {
            transition.payloads.append(.pushTokenUpdated(PushTokenChange(pushToken: token)))
        }
        if scheduledStart == nil, let alert = request.alert {
            transition.payloads.append(.alert(alert))
        }
        activity.advance(to: now, rules: rules, into: &transition)
        return (activity, transition)
    }

    /// Applies an input by the lifecycle rules and says what happened.
    ///
    /// Deadlines that are due take effect first, so an update that arrives after the stale date
    /// or the automatic end sees the activity as the rules left it. Invalid input throws and
    /// changes nothing; input the rules ignore is recorded and reported in `Transition.ignored`.
    /// A push is never refused, only applied or dropped, as on a device.
    ///
    /// - Parameter type: The activity type's registered shapes, if any: content must fit them.
    public mutating func handle(
        _ input: Input, now: Date, rules: LifecycleRules, type: ActivityType? = nil
    ) throws(IsletError) -> Transition {
        // Deadlines run before the input is judged, so a refusal may come after a change: work
        // on a copy, and keep it only when the whole input succeeds.
        var next = self
        let transition = try next.respond(to: input, now: now, rules: rules, type: type)
        self = next
        return transition
    }

    private mutating func respond(
        to input: Input, now: Date, rules: LifecycleRules, type: ActivityType?
    ) throws(IsletError) -> Transition {
        try validate(input, rules: rules, type: type)
        var transition = Transition()
        advance(to: now, rules: rules, into: &transition)
        switch input {
        case .push(let change, let delivery):
            receive(change, delivery: delivery, now: now, rules: rules, type: type, into: &transition)
        case .update(let update):
            let timestamp = stamp(update.timestamp, now: now)
            if let reason = ignoreReason(forUpdateAt: timestamp, now: now, rules: rules) {
                ignore(reason, action: "update", content: update.content, timestamp: timestamp, into: &transition)
            } else {
                apply(update.content, alert: update.alert, timestamp: timestamp, now: now, into: &transition)
            }
        case .end(let end):
            try finish(end, now: now, rules: rules, into: &transition)
        case .userDismissal:
            try dismissByUser(now: now, into: &transition)
        case .appDisabled:
            if state.isLive {
                endNow(reason: .appDisabled, at: now, into: &transition)
            }
            if state == .ended {
                dismissAt = now
                move(to: .dismissed, reason: .appDisabled, at: now, into: &transition)
            }
        case .advance:
            break
        case .renewed(let successor):
            guard state.isLive else {
                throw IsletError(.activityEnded, "\(id) is \(state.rawValue): only a live activity is renewed.")
            }
            renewedBy = successor
            endNow(reason: .renewed, at: now, into: &transition)
            dismissAt = now
            move(to: .dismissed, reason: .renewed, at: now, into: &transition)
        case .phoneReport(.ended):
            if state.isLive {
                let wasShown = state != .pending
                endNow(reason: .endedOnPhone, at: now, into: &transition)
                dismissAt = wasShown ? rules.dismissalDate(endedAt: now, startedAt: startedAt, policy: .default) : now
            }
        case .phoneReport(.dismissed):
            if state != .dismissed {
                if endedAt == nil { endedAt = now }
                renewAt = nil
                dismissAt = now
                move(to: .dismissed, reason: .userDismissed, at: now, into: &transition)
            }
        }
        advance(to: now, rules: rules, into: &transition)
        return transition
    }

    // MARK: Rules

    private func validate(_ input: Input, rules: LifecycleRules, type: ActivityType?) throws(IsletError) {
        let content: ActivityContent? =
            switch input {
            case .update(let update): update.content
            case .end(let end): end.content
            case .userDismissal, .appDisabled, .advance, .push, .renewed, .phoneReport: nil
            }
        if let content {
            try content.validate()
            try rules.checkPayloadSize(attributes: attributes, state: content.state)
            try Self.checkShape(of: content, type: type)
        }
    }

    /// Refuses content whose state does not fit the activity type's registered shape.
    private static func checkShape(of content: ActivityContent, type: ActivityType?) throws(IsletError) {
        if let mismatch = type?.contentState?.mismatch(in: content.state, at: "content-state") {
            throw IsletError(.contentStateMismatch, "\(mismatch) (activity type \(type?.name ?? ""))")
        }
    }

    /// A push, as a device takes it: whatever it could not decode, or whatever the rules or the
    /// budget rule out, is dropped and recorded; the rest is applied like a local update or end.
    private mutating func receive(
        _ change: PushedChange, delivery: PushDelivery, now: Date, rules: LifecycleRules, type: ActivityType?,
        into transition: inout Transition
    ) {
        let (action, content, timestamp): (String, ActivityContent?, Date) =
            switch change {
            case .update(let update): ("update", update.content, stamp(update.timestamp, now: now))
            case .end(let end): ("end", end.content, stamp(end.timestamp, now: now))
            }
        if let content {
            var mismatch: IsletError?
            do {
                try content.validate()
                try rules.checkPayloadSize(attributes: attributes, state: content.state)
                try Self.checkShape(of: content, type: type)
            } catch {
                mismatch = error
            }
            if let mismatch {
                let reason: IgnoreReason = mismatch.reason == .attributesTooLarge ? .attributesTooLarge : .contentStateMismatch
                transition.ignored = reason
                transition.payloads.append(.updateIgnored(IgnoredUpdate(
                    reason: reason, action: action, content: content, timestamp: timestamp,
                    lastUpdateTimestamp: lastUpdateTimestamp, message: mismatch.message
                )))
                return
            }
        }
        switch change {
        case .update(let update):
            if let reason = ignoreReason(forUpdateAt: timestamp, now: now, rules: rules) {
                ignore(reason, action: action, content: content, timestamp: timestamp, into: &transition)
                return
            }
            if let budget = delivery.budgetPerHour, !spendBudget(budget, now: now) {
                ignore(.budgetExceeded, action: action, content: content, timestamp: timestamp, into: &transition)
                return
            }
            apply(update.content, alert: update.alert, timestamp: timestamp, now: now, into: &transition)
        case .end(let end):
            // Ends are never throttled: a device always lets an activity end.
            try? finish(end, now: now, rules: rules, into: &transition)
        }
    }

    /// Spends one push from the hourly budget; `false` when it is spent.
    private mutating func spendBudget(_ budget: Int, now: Date) -> Bool {
        var recent = (budgetedPushes ?? []).filter { now.timeIntervalSince($0) < 3600 }
        defer { budgetedPushes = recent.isEmpty ? nil : recent }
        guard recent.count < budget else { return false }
        recent.append(now)
        return true
    }

    /// The timestamp an update is ordered by. One sent without a timestamp means "now, the
    /// latest": it is stamped with the time, or with the last applied update's timestamp when
    /// the clock reads earlier — requests that read the clock and then raced to the store, or a
    /// clock stepped back — so it is never refused as older.
    private func stamp(_ timestamp: Date?, now: Date) -> Date {
        timestamp ?? max(now, lastUpdateTimestamp ?? now)
    }

    private func ignoreReason(forUpdateAt timestamp: Date, now: Date, rules: LifecycleRules) -> IgnoreReason? {
        switch state {
        case .ended: return .activityEnded
        case .dismissed: return .activityDismissed
        case .pending, .active, .stale: break
        }
        if timestamp.timeIntervalSince(now) > rules.maxTimestampLead {
            return .timestampTooFarAhead
        }
        if let last = lastUpdateTimestamp, timestamp < last {
            return .olderTimestamp
        }
        return nil
    }

    private mutating func apply(
        _ newContent: ActivityContent, alert: Alert?, timestamp: Date, now: Date, into transition: inout Transition
    ) {
        content = newContent
        lastUpdateTimestamp = timestamp
        transition.payloads.append(.contentUpdated(ContentChange(content: newContent, timestamp: timestamp)))
        if let alert, state != .pending {
            transition.payloads.append(.alert(alert))
        }
        let freshNow = newContent.staleDate.map { $0 > now } ?? true
        if state == .stale, freshNow {
            move(to: .active, reason: .contentUpdated, at: now, into: &transition)
        } else if state == .active, !freshNow {
            // Content that arrives already stale makes the activity stale as it arrives, not
            // at the past date it carries.
            move(to: .stale, reason: .staleDateReached, at: now, into: &transition)
        }
    }

    private mutating func ignore(
        _ reason: IgnoreReason, action: String, content: ActivityContent?, timestamp: Date,
        into transition: inout Transition
    ) {
        transition.ignored = reason
        transition.payloads.append(.updateIgnored(IgnoredUpdate(
            reason: reason, action: action, content: content, timestamp: timestamp,
            lastUpdateTimestamp: lastUpdateTimestamp
        )))
    }

    private mutating func finish(
        _ end: EndRequest, now: Date, rules: LifecycleRules, into transition: inout Transition
    ) throws(IsletError) {
        let timestamp = stamp(end.timestamp, now: now)
        if !state.isLive {
            ignore(state == .ended ? .activityEnded : .activityDismissed, action: "end", content: end.content,
                   timestamp: timestamp, into: &transition)
            return
        }
        if let finalContent = end.content {
            if let reason = ignoreReason(forUpdateAt: timestamp, now: now, rules: rules) {
                // The end still happens; only its stale content is left out, and the history says so.
                ignore(reason, action: "end", content: finalContent, timestamp: timestamp, into: &transition)
                transition.ignored = nil
            } else {
                apply(finalContent, alert: nil, timestamp: timestamp, now: now, into: &transition)
            }
        }
        let wasShown = state != .pending
        endNow(reason: .endedByApp, at: now, into: &transition)
        dismissAt = wasShown ? rules.dismissalDate(endedAt: now, startedAt: startedAt, policy: end.dismissalPolicy) : now
    }

    private mutating func dismissByUser(now: Date, into transition: inout Transition) throws(IsletError) {
        switch state {
        case .pending:
            throw IsletError(.activityPending, "A scheduled activity is not shown yet, so it cannot be dismissed; end it instead.")
        case .dismissed:
            throw IgnoreReason.activityDismissed.error
        case .active, .stale, .ended:
            if endedAt == nil { endedAt = now }
            renewAt = nil
            dismissAt = now
            move(to: .dismissed, reason: .userDismissed, at: now, into: &transition)
        }
    }

    // MARK: Deadlines

    /// Lets every deadline up to `now` take effect, in order, each at its own time.
    private mutating func advance(to now: Date, rules: LifecycleRules, into transition: inout Transition) {
        while let deadline = lifecycleDeadline, deadline <= now {
            switch state {
            case .pending:
                startedAt = deadline
                autoEndAt = deadline.addingTimeInterval(rules.maxActiveDuration)
                if renew == true { renewAt = rules.renewal(startedAt: deadline, until: renewUntil) }
                move(to: .active, reason: .scheduledStart, at: deadline, into: &transition)
                if let alert = startAlert {
                    transition.payloads.append(.alert(alert))
                }
                scheduledStart = nil
                startAlert = nil
            case .active where autoEndAt.map({ $0 > deadline }) ?? true:
                move(to: .stale, reason: .staleDateReached, at: max(deadline, startedAt ?? deadline), into: &transition)
            case .active, .stale:
                endNow(reason: .maxDurationReached, at: deadline, into: &transition)
                dismissAt = rules.dismissalDate(endedAt: deadline, startedAt: startedAt, policy: .default)
            case .ended:
                move(to: .dismissed, reason: .dismissalPolicy, at: deadline, into: &transition)
            case .dismissed:
                return
            }
        }
    }

    private mutating func endNow(reason: StateChangeReason, at time: Date, into transition: inout Transition) {
        endedAt = time
        renewAt = nil
        move(to: .ended, reason: reason, at: time, into: &transition)
    }

    private mutating func move(
        to newState: ActivityState, reason: StateChangeReason, at time: Date, into transition: inout Transition
    ) {
        let change = StateChange(from: state, to: newState, reason: reason, at: time)
        state = newState
        if newState == .dismissed {
            dismissedAt = time
        }
        transition.payloads.append(.stateChanged(change))
    }
}
