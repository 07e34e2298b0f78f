import Foundation
import IsletCore
import IsletFCM

extension FuzzTarget {
    /// What an Android phone and an FCM credential take from outside (docs/android.md): the same
    /// bytes read as `data.islet` by the phone (`IsletData`) and as a service-account JSON by
    /// `PUT /v1/apps/{bundleId}/fcm` (`ServiceAccount.read`).
    ///
    /// - `data.islet` is never refused (FCM took the message): it is a change that names its
    ///   activity, with dates in `WireFormat.dateRange`, a finite score and an object for a
    ///   state — or a drop with its reason in words.
    /// - A service account is refused with `invalidRequest` and a message, or read as one whose
    ///   every field a sender uses holds its rule: `check()` passes, the project id is Google's
    ///   form, the `token_uri` an address the HTTP client can be given, and its key signs.
    public static let androidInputs = FuzzTarget(name: "android-inputs") { data throws(FuzzFailure) in
        let text = String(decoding: data, as: UTF8.self)
        let read = IsletData.read(text, device: .defaultDevice)
        func inRange(_ date: Date?) -> Bool { date.map { WireFormat.isAcceptedDate($0.timeIntervalSince1970) } ?? true }
        func content(_ content: ActivityContent?) throws(FuzzFailure) {
            guard let content else { return }
            try expect(content.state.objectValue != nil, "a content state that is not an object: \(content.state)")
            try expect(content.relevanceScore.isFinite, "a relevance of \(content.relevanceScore)")
            try expect(inRange(content.staleDate), "a stale date of \(String(describing: content.staleDate))")
        }
        switch read.payload.action {
        case .start(let start):
            try expect(read.tag?.isEmpty == false && start.timestamp != nil && inRange(start.timestamp), "a start without its tag or time")
            try content(start.request.content)
            try expect(start.request.attributes.objectValue != nil && !start.request.attributesType.isEmpty, "a start without its attributes")
        case .update(let update):
            try expect(read.tag?.isEmpty == false && update.timestamp != nil && inRange(update.timestamp), "an update without its tag or time")
            try content(update.content)
        case .end(let end):
            try expect(read.tag?.isEmpty == false && end.timestamp != nil && inRange(end.timestamp), "an end without its tag or time")
            try content(end.content)
            if case .after(let date) = end.dismissalPolicy { try expect(inRange(date), "a dismissal date of \(date)") }
        case .undeliverable(let reason, let detail):
            try expect(reason == .invalidPayload && !detail.isEmpty, "dropped without a reason: \(reason) \(detail)")
        }

        let account: ServiceAccount
        do throws(IsletError) {
            account = try ServiceAccount.read(data)
        } catch {
            try expect(error.reason == .invalidRequest && !error.message.isEmpty, "refused with \(error.reason): \(error.message)")
            return
        }
        do throws(IsletError) {
            try account.check()
            _ = try TokenAddress(account.tokenUri)
            _ = try account.publicKey()
        } catch {
            throw FuzzFailure("read an account that breaks its own rules: \(error.message)")
        }
        try expect(ServiceAccount.isProjectId(account.projectId), "read the project id \(account.projectId.debugDescription)")
    }
}
