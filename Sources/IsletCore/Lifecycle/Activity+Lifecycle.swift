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
    /// - Returns: The activity and the events of its start.
    public static func request(
        _ request: ActivityRequest, id: ActivityID, bundleId: BundleID, key: String? = nil, pushToken: String?,
        occupancy: Occupancy, now: Date, rules: LifecycleRules
    ) throws(IsletError) -> (Activity, Transition) {
        try request.validate()
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
    public mutating func handle(_ input: Input, now: Date, rules: LifecycleRules) throws(IsletError) -> Transition {
        try validate(input, rules: rules)
        var transition = Transition()
        advance(to: now, rules: rules, into: &transition)
        switch input {
        case .update(let update):
            let timestamp = update.timestamp ?? now
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
        }
        advance(to: now, rules: rules, into: &transition)
        return transition
    }

    // MARK: Rules

    private func validate(_ input: Input, rules: LifecycleRules) throws(IsletError) {
        let content: ActivityContent? =
            switch input {
            case .update(let update): update.content
            case .end(let end): end.content
            case .userDismissal, .appDisabled, .advance: nil
            }
        if let content {
            try content.validate()
            try rules.checkPayloadSize(attributes: attributes, state: content.state)
        }
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
        let timestamp = end.timestamp ?? now
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
            dismissAt = now
            move(to: .dismissed, reason: .userDismissed, at: now, into: &transition)
        }
    }

    // MARK: Deadlines

    /// Lets every deadline up to `now` take effect, in order, each at its own time.
    private mutating func advance(to now: Date, rules: LifecycleRules, into transition: inout Transition) {
        while let deadline = nextDeadline, deadline <= now {
            switch state {
            case .pending:
                startedAt = deadline
                autoEndAt = deadline.addingTimeInterval(rules.maxActiveDuration)
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
