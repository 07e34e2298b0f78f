import Foundation
import IsletCore

/// The lifecycle's invariants, checked after every step an activity takes: what
/// `Activity.request` and `Activity.handle` promise whatever arrives, and in what order.
///
/// Some hold for any input. The ones about time need numbers that order — every date and
/// number so far finite, as JSON can only carry finite ones — and, for the history's order, a
/// clock that has not gone back.
struct LifecycleCheck {
    let rules: LifecycleRules
    /// Whether every number so far was finite.
    var finite = true
    /// Whether the clock never went back.
    var monotonic = true
    private var lastNow: Date?
    /// The time of the last state change recorded so far.
    private var lastChangeAt: Date?

    init(rules: LifecycleRules) {
        self.rules = rules
    }

    /// Notes the time of a step and the numbers it carries, before it runs.
    mutating func observe(now: Date, numbers: [Double]) {
        if !now.timeIntervalSince1970.isFinite || numbers.contains(where: { !$0.isFinite }) { finite = false }
        if let lastNow, now < lastNow { monotonic = false }
        lastNow = now
    }

    /// Checks a new activity and its start.
    mutating func started(_ activity: Activity, _ transition: Transition, request: ActivityRequest, now: Date) throws(FuzzFailure) {
        guard case .started(let recorded)? = transition.payloads.first else {
            throw FuzzFailure("a start's first event is not started: \(transition.payloads)")
        }
        try expect(recorded.content == request.content, "the started event does not carry the requested content")
        lastChangeAt = nil
        let initial: ActivityState = recorded.state
        try expect(initial == .pending || initial == .active, "an activity started \(initial)")
        if finite {
            let scheduled = request.start.map { $0 > now } ?? false
            try expect(
                (initial == .pending) == scheduled,
                "an activity requested to start at \(request.start.map(describe) ?? "once") at \(describe(now)) began \(initial)"
            )
        }
        try check(activity, after: transition, from: initial, now: now)
    }

    /// Checks one input's effect: `before` is the activity as it was, `after` as `handle` left it.
    mutating func handled(
        _ input: Activity.Input, before: Activity, after: Activity, transition: Transition, now: Date
    ) throws(FuzzFailure) {
        // Values compare equal only when they hold no NaN: those comparisons wait for `finite`.
        if before.state == .dismissed {
            try expect(after.state == .dismissed && transition.payloads.allSatisfy(\.isIgnoredUpdate), "a dismissed activity changed on \(input)")
            try expect(!finite || after == before, "a dismissed activity changed on \(input)")
        }
        let contentUpdates = transition.payloads.filter { if case .contentUpdated = $0 { true } else { false } }
        if !before.state.isLive {
            try expect(contentUpdates.isEmpty, "an activity that had ended (\(before.state)) got new content on \(input)")
        }
        if transition.ignored != nil {
            try expect(contentUpdates.isEmpty, "an ignored input changed the content: \(input)")
            try expect(transition.payloads.contains(where: \.isIgnoredUpdate), "an input was ignored without an updateIgnored event: \(input)")
        }
        if finite, after.content != before.content {
            try expect(!contentUpdates.isEmpty, "the content changed without a contentUpdated event on \(input)")
        }
        if before.lastUpdateTimestamp != nil {
            try expect(after.lastUpdateTimestamp != nil, "the last update's timestamp was forgotten on \(input)")
        }
        if finite, let previous = before.lastUpdateTimestamp, let latest = after.lastUpdateTimestamp {
            try expect(latest >= previous, "the applied timestamp went back from \(describe(previous)) to \(describe(latest)) on \(input)")
        }
        if finite {
            for case .contentUpdated(let change) in transition.payloads {
                try expect(
                    change.timestamp.timeIntervalSince(now) <= rules.maxTimestampLead,
                    "content stamped \(describe(change.timestamp)) was applied at \(describe(now)), past the lead"
                )
            }
        }
        try check(after, after: transition, from: before.state, now: now)
    }

    /// What holds of every activity after every step.
    private mutating func check(_ activity: Activity, after transition: Transition, from initial: ActivityState, now: Date)
        throws(FuzzFailure)
    {
        // The history: each change starts where the last one left off, along the lifecycle's
        // edges; no content after the end and no alert while pending.
        var state = initial
        var lastContent: ActivityContent?
        for payload in transition.payloads {
            switch payload {
            case .stateChanged(let change):
                try expect(change.from == state, "a change from \(change.from) while the activity was \(state)")
                try expect(Self.edges[change.from, default: []].contains(change.to), "a change \(change.from) → \(change.to)")
                if finite {
                    if monotonic {
                        // A clock that went back can find a change dated later than it reads: a
                        // stale date from before the start takes effect at the start.
                        try expect(change.at <= now, "a change \(change.from) → \(change.to) at \(describe(change.at)), after now \(describe(now))")
                        if let lastChangeAt {
                            try expect(
                                change.at >= lastChangeAt,
                                "a change \(change.from) → \(change.to) at \(describe(change.at)), before the change at \(describe(lastChangeAt))"
                            )
                        }
                        try checkCause(of: change, in: activity)
                    }
                    lastChangeAt = change.at
                }
                state = change.to
            case .contentUpdated(let change):
                try expect(state.isLive, "content applied to an activity that is \(state)")
                lastContent = change.content
            case .alert:
                try expect(state != .pending, "an alert for an activity not yet shown")
            default:
                break
            }
        }
        try expect(state == activity.state, "the events end at \(state) but the activity is \(activity.state)")
        if finite, let lastContent {
            try expect(lastContent == activity.content, "the last contentUpdated event is not the activity's content")
        }
        // The content is always one the rules accept.
        do throws(IsletError) {
            try activity.content.validate()
            try rules.checkPayloadSize(attributes: activity.attributes, state: activity.content.state)
        } catch {
            throw FuzzFailure("the activity holds content the rules refuse: \(error)")
        }
        try checkFields(of: activity)
        if let pushes = activity.budgetedPushes {
            try expect(!pushes.isEmpty && pushes.count <= rules.frequentPushBudgetPerHour, "a push budget of \(pushes.count) entries")
        }
        guard finite else { return }
        // The rules' own deadlines; a renewal is the engine's to take (`Engine.renew`).
        if let deadline = activity.lifecycleDeadline {
            try expect(deadline > now, "the next deadline \(describe(deadline)) is due at \(describe(now)) but did not take effect")
        }
        if let startedAt = activity.startedAt, let autoEndAt = activity.autoEndAt {
            try expect(
                autoEndAt == startedAt.addingTimeInterval(rules.maxActiveDuration),
                "the automatic end \(describe(autoEndAt)) is not the start \(describe(startedAt)) plus the maximum duration"
            )
        }
        if let endedAt = activity.endedAt, let dismissAt = activity.dismissAt {
            try expect(!monotonic || dismissAt >= endedAt, "dismissal at \(describe(dismissAt)) before the end at \(describe(endedAt))")
            try expect(
                dismissAt <= endedAt.addingTimeInterval(rules.dismissalWindow),
                "dismissal at \(describe(dismissAt)), past the window after the end at \(describe(endedAt))"
            )
            if let startedAt = activity.startedAt {
                try expect(
                    dismissAt <= max(endedAt, startedAt.addingTimeInterval(rules.maxLifetime)),
                    "dismissal at \(describe(dismissAt)), past the maximum lifetime from the start at \(describe(startedAt))"
                )
            }
        }
        do {
            _ = try WireFormat.encoder().encode(activity)
        } catch {
            throw FuzzFailure("the activity cannot be stored: \(error)")
        }
    }

    /// A change caused by a deadline comes no earlier than what set the deadline.
    private func checkCause(of change: StateChange, in activity: Activity) throws(FuzzFailure) {
        switch change.to {
        case .stale, .ended:
            if let startedAt = activity.startedAt, change.from != .pending {
                try expect(change.at >= startedAt, "\(change.to) at \(describe(change.at)), before the start at \(describe(startedAt))")
            }
        case .dismissed:
            if let endedAt = activity.endedAt, change.reason == .dismissalPolicy {
                try expect(change.at >= endedAt, "dismissed at \(describe(change.at)), before the end at \(describe(endedAt))")
            }
        case .pending, .active:
            break
        }
    }

    /// The fields each state needs, and the ones it must not have.
    private func checkFields(of activity: Activity) throws(FuzzFailure) {
        let fields = "scheduledStart \(activity.scheduledStart.map(describe) ?? "nil"), startedAt \(activity.startedAt.map(describe) ?? "nil"), endedAt \(activity.endedAt.map(describe) ?? "nil"), dismissAt \(activity.dismissAt.map(describe) ?? "nil"), dismissedAt \(activity.dismissedAt.map(describe) ?? "nil")"
        let holds: Bool
        switch activity.state {
        case .pending:
            holds = activity.scheduledStart != nil && activity.startedAt == nil && activity.endedAt == nil
        case .active, .stale:
            holds = activity.scheduledStart == nil && activity.startedAt != nil && activity.autoEndAt != nil
                && activity.endedAt == nil && activity.dismissAt == nil && activity.dismissedAt == nil
        case .ended:
            holds = activity.endedAt != nil && activity.dismissAt != nil && activity.dismissedAt == nil
        case .dismissed:
            holds = activity.endedAt != nil && activity.dismissedAt != nil
        }
        try expect(holds, "a \(activity.state) activity with \(fields)")
        // One that ended before its scheduled start keeps the schedule it never reached.
        let started = activity.startedAt != nil
        try expect(!started || activity.scheduledStart == nil, "a \(activity.state) activity that started keeps its scheduled start")
        try expect(!started || activity.startAlert == nil, "a \(activity.state) activity that started keeps its start alert")
    }

    /// The lifecycle's edges: pending → active ⇄ stale → ended → dismissed; a pending activity
    /// can end unseen and a shown one can be dismissed by a person.
    static let edges: [ActivityState: Set<ActivityState>] = [
        .pending: [.active, .ended],
        .active: [.stale, .ended, .dismissed],
        .stale: [.active, .ended, .dismissed],
        .ended: [.dismissed],
        .dismissed: [],
    ]
}

extension EventPayload {
    var isIgnoredUpdate: Bool {
        if case .updateIgnored = self { true } else { false }
    }
}

/// A date as the seconds a script writes.
func describe(_ date: Date) -> String {
    "\(date.timeIntervalSince1970)"
}
