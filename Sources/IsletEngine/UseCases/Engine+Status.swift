import Foundation
import IsletCore

extension Engine {
    /// "Why isn't it showing?" (`GET /v1/activities/{id}/status`): for an id of a chain, its live
    /// end; what its phone last acknowledged, what waits, the budget, the renewal and the last
    /// refusal, from what is stored, in one read.
    public func status(of id: ActivityID, owner: BundleID?) async throws -> ActivityStatus {
        let (rules, now) = (self.rules, clock.now())
        return try await read { store in
            let activity = try store.loadActivity(following: id, owner: owner)
            let log = try store.history(of: activity.id).filter { $0.type == .delivery }.compactMap { event -> (time: Date, report: DeliveryReport)? in
                guard let decoded = try? event.decoded(), let report = try? decoded.data.decode(DeliveryReport.self) else { return nil }
                return (decoded.time, report)
            }
            var status = ActivityStatus(
                id: activity.id, requested: id, state: activity.state, lastUpdateTimestamp: activity.lastUpdateTimestamp,
                phone: try StatusReading.phone(of: activity, log: log, rules: rules, now: now, in: store),
                renewal: try StatusReading.renewal(of: activity, in: store),
                lastRefusal: log.last { StatusReading.isRefusal($0.report) }.map { entry in
                    ActivityStatus.Refusal(
                        delivery: entry.report.delivery, event: entry.report.event, at: entry.time, outcome: entry.report.outcome,
                        status: entry.report.status, reason: entry.report.reason, note: entry.report.note
                    )
                },
                summary: []
            )
            let installation = try StatusReading.installation(of: activity, on: status.phone?.device ?? activity.deviceId, in: store)
            status.summary = StatusReading.summary(of: status, activity: activity, installation: installation)
            return status
        }
    }
}

/// The pieces of an activity's status, each from the store.
enum StatusReading {
    /// What the installation an activity's phone is (docs/installations.md) reported of the
    /// activity's type: the "why isn't it showing" answer names a missing or retired token.
    struct InstallationSeen {
        let installation: Installation
        /// Its current push-to-start token of the activity's type, if any.
        let pushToStart: PhoneToken?
        /// Its latest retired one of the type, when there is no current one.
        let retiredPushToStart: PhoneToken?
    }

    static func installation(of activity: Activity, on device: DeviceID, in store: any StoreReading) throws -> InstallationSeen? {
        guard let installation = try store.installation(device), installation.bundleId == activity.bundleId else { return nil }
        let ofType = try store.phoneTokens(deviceId: device).filter {
            $0.bundleId == activity.bundleId && $0.kind == .pushToStart && $0.attributesType == activity.attributesType
        }
        let current = ofType.first { $0.retiredAt == nil }
        return InstallationSeen(
            installation: installation, pushToStart: current,
            retiredPushToStart: current == nil ? ofType.filter { $0.retiredAt != nil }.max { $0.retiredAt! < $1.retiredAt! } : nil
        )
    }

    static func phone(
        of activity: Activity, log: [(time: Date, report: DeliveryReport)], rules: LifecycleRules, now: Date, in store: any StoreReading
    ) throws -> ActivityStatus.Phone? {
        guard let record = try store.phoneActivity(activity.id) else { return nil }
        let waiting = try store.unfinishedDeliveries(in: .activity(activity.id))
        var budget: ActivityStatus.Budget?
        if record.platform == .ios {
            let (sends, perHour) = try PhoneBudget.standing(deviceId: record.deviceId, bundleId: record.bundleId, rules: rules, now: now, in: store)
            budget = ActivityStatus.Budget(perHour: perHour, spent: sends.count, nextRefillAt: sends.min()?.addingTimeInterval(PhoneBudget.window))
        }
        let hasToken = try store.updateToken(activityId: activity.id) != nil
        return ActivityStatus.Phone(
            device: record.deviceId, platform: record.platform, updateToken: record.platform == .android || hasToken,
            acknowledged: log.last { $0.report.outcome == .delivered }.map { entry in
                ActivityStatus.Acknowledged(delivery: entry.report.delivery, event: entry.report.event, at: entry.time, priority: entry.report.priority)
            },
            waiting: waiting.count, oldestWaitingSince: waiting.map(\.createdAt).min(), budget: budget
        )
    }

    static func renewal(of activity: Activity, in store: any StoreReading) throws -> ActivityStatus.Renewal? {
        guard activity.renew == true || activity.renewedFrom != nil else { return nil }
        var why: String?
        if activity.state == .pending {
            // Its renewal is planned when it starts.
            why = try store.renewalBlocker(of: activity)
            return ActivityStatus.Renewal(renewAt: nil, renewUntil: activity.renewUntil, possible: why == nil, why: why, renewedFrom: nil)
        }
        if activity.renew == true, activity.state.isLive, activity.renewAt == nil {
            if let until = activity.renewUntil, let end = activity.autoEndAt, until <= end {
                why = "renewUntil (\(ISO8601DateFormatter().string(from: until))) comes before its end: it is the chain's last"
            } else {
                why = "its renewal was refused (see its delivery log)"
            }
        } else if activity.renewAt != nil {
            why = try store.renewalBlocker(of: activity)
        }
        return ActivityStatus.Renewal(
            renewAt: activity.renewAt, renewUntil: activity.renewUntil, possible: activity.renewAt != nil && why == nil, why: why,
            renewedFrom: activity.renewedFrom
        )
    }

    /// What an installation lacks to have an activity of this type started on it by push: no
    /// push-to-start token of the type, or one Apple retired with none since; `nil` when it has one.
    static func missingPushToStart(_ seen: InstallationSeen, of activity: Activity, time: (Date) -> String) -> String? {
        guard seen.pushToStart == nil else { return nil }
        let id = seen.installation.id
        if let retired = seen.retiredPushToStart, let at = retired.retiredAt {
            return "Installation \(id)'s push-to-start token for \(activity.attributesType) was retired at \(time(at))\(retired.retiredReason.map { " (\($0))" } ?? "") and it has reported none since"
        }
        return "Installation \(id) has reported no push-to-start token for \(activity.attributesType) (it registered \(time(seen.installation.createdAt)))"
    }

    /// A line of the log that says the phone did not get a change, or may not.
    static func isRefusal(_ report: DeliveryReport) -> Bool {
        if let status = report.status, status != 200 { return true }
        return [.failed, .tokenRetired, .held].contains(report.outcome)
    }

    static func summary(of status: ActivityStatus, activity: Activity, installation seen: InstallationSeen? = nil) -> [String] {
        let formatter = ISO8601DateFormatter()
        let time = { (date: Date) in formatter.string(from: date) }
        var lines: [String] = []
        if status.requested != status.id {
            lines.append("\(status.requested) was renewed; \(status.id) is the live activity of its chain.")
        }
        if let phone = status.phone {
            if let acknowledged = phone.acknowledged {
                lines.append("The phone's push service accepted the \(acknowledged.event) of delivery #\(acknowledged.delivery) at \(time(acknowledged.at))\(acknowledged.priority.map { " (priority \($0))" } ?? "").")
            } else {
                lines.append("Nothing reached \(phone.device) yet.")
            }
            if phone.waiting > 0 {
                lines.append("\(phone.waiting) change\(phone.waiting == 1 ? "" : "s") wait\(phone.waiting == 1 ? "s" : "") to be sent\(phone.oldestWaitingSince.map { ", the oldest since \(time($0))" } ?? "").")
            } else if phone.acknowledged != nil {
                lines.append("Nothing waits: the phone has the latest content.")
            }
            if let seen, seen.installation.revoked {
                lines.append("Installation \(phone.device) is revoked (its client key was cut): it reports nothing more until the app registers again.")
            }
            if !phone.updateToken, activity.state.isLive {
                if let seen {
                    lines.append(
                        "Installation \(phone.device) (registered \(time(seen.installation.createdAt)), last seen \(time(seen.installation.lastSeenAt))) has not reported this activity's update token: updates wait for it. The app library reports it when ActivityKit hands it out; an app that does it by hand sends PUT /v1/activities/\(status.id)/push-token."
                    )
                } else {
                    lines.append("The app on \(phone.device) has not reported this activity's update token: updates wait for it (PUT /v1/activities/\(status.id)/push-token).")
                }
            }
            if let seen, phone.platform == .ios, let missing = missingPushToStart(seen, of: activity, time: time) {
                lines.append(missing + ": nothing of the type starts on the phone by push (a send, a renewal) until the app reports one.")
            }
            if let budget = phone.budget {
                let refill = budget.nextRefillAt.map { "; one comes back at \(time($0))" } ?? ""
                lines.append(
                    budget.left > 0
                        ? "\(budget.left) of \(budget.perHour) priority-10 pushes left this hour for \(activity.bundleId) on \(phone.device)\(refill)."
                        : "The hour's \(budget.perHour) priority-10 pushes for \(activity.bundleId) on \(phone.device) are spent: updates, alerts too, go at priority 5 (the phone shows them when it can; ends still go at 10)\(refill)."
                )
            }
        } else if let seen, seen.installation.platform == .ios, let missing = missingPushToStart(seen, of: activity, time: time) {
            // Started with no push-to-start token to send it by: the phone was never asked.
            lines.append(missing + ": its start was not sent to the phone, which shows nothing; the app library reports the token once the app tracks the type.")
        } else {
            lines.append("Shown on Islet's own displays: no real phone gets it.")
        }
        if let renewal = status.renewal {
            if let at = renewal.renewAt {
                lines.append(
                    renewal.possible
                        ? "Its successor takes over at \(time(at)), before its end\(activity.autoEndAt.map { " at \(time($0))" } ?? "")."
                        : "Its successor takes over at \(time(at)) on Islet, but not on the phone: \(renewal.why ?? "")."
                )
            } else if let why = renewal.why {
                lines.append("Not renewed: \(why).")
            }
        }
        if let refusal = status.lastRefusal {
            let answer = refusal.status.map { " \($0)\(refusal.reason.map { " \($0)" } ?? "")" } ?? ""
            lines.append("Last refusal:\(answer) for the \(refusal.event) of #\(refusal.delivery) at \(time(refusal.at)) (\(refusal.outcome.rawValue))\(refusal.note.map { ": \($0)" } ?? "").")
        }
        return lines
    }
}
