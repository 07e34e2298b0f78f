import Foundation
import IsletCore

extension FuzzTarget {
    /// A REST request body, decoded as every route's body type by `WireFormat.decodeRequest`,
    /// as `Request.decodeJSON` does: each decodes or is refused with `invalidRequest` or
    /// `malformedJSON`, never another reason and never a trap. What decodes carries only dates
    /// in `WireFormat.dateRange` and finite relevance, and goes on to the rules as the routes
    /// send it — a start, an update and an end of a live activity — under `LifecycleCheck`.
    public static let requestBody = FuzzTarget(name: "request-body") { data throws(FuzzFailure) in
        try checkParseAgreesWithFoundation(data)
        var bodies = RequestBodies(bytes: data)
        try bodies.decode(CreateAppBody.self)
        try bodies.decode(UpdateAppBody.self)
        try bodies.decode(CreateDeviceBody.self)
        try bodies.decode(SettingsBody.self)
        try bodies.decode(ProviderKeyBody.self)
        try bodies.decode(ActivityTypeBody.self)
        try bodies.decode(CreateChannelBody.self)
        try bodies.decode(FCMCredentialBody.self)
        try bodies.decode(ServiceAccountBody.self)
        try bodies.decode(PhoneReportBody.self)
        try bodies.decode(CreateWebhookBody.self)
        try bodies.decode(UpdateWebhookBody.self)
        try bodies.decode(RotateWebhookSecretBody.self)
        if let body = try bodies.decode(FCMTokenBody.self) {
            do {
                let address = try body.address()
                try address.validate()
                try expect(address.value.allSatisfy { $0.isASCII && !$0.isWhitespace }, "took the \(address.name) \(address.value.debugDescription)")
                if case .fid(let fid) = address { try expect(fid.utf8.count == FCMAddress.installationIdLength, "took the installation ID \(fid.debugDescription)") }
            } catch let error as IsletError {
                try expect(error.reason == .invalidRequest, "refused an FCM address with \(error.reason)")
            } catch {
                throw FuzzFailure("\(error)")
            }
        }
        if let body = try bodies.decode(DeliveryCredentialBody.self) {
            // Apple's limits on a key set refuse with a reason, whatever the key says.
            do {
                try KeySet.check(
                    adding: body.keyId, scope: body.kind ?? .team, topics: body.topics ?? ["com.example.app"], relatedKeyId: body.relatedKeyId,
                    to: [KeySet.Member(keyId: "KEYTEAM001", scope: .team), KeySet.Member(keyId: "KEYTOPIC01", scope: .topic)]
                )
            } catch let error as IsletError {
                try expect([.invalidRequest, .tooManyKeys].contains(error.reason), "refused a delivery key with \(error.reason)")
            } catch {
                throw FuzzFailure("\(error)")
            }
        }
        if let body = try bodies.decode(PushToStartTokenBody.self) {
            try checkDeviceToken(body.token)
        }
        if let body = try bodies.decode(PushTokenBody.self) {
            try checkDeviceToken(body.token)
        }
        if let body = try bodies.decode(BroadcastBody.self) {
            switch body.change {
            case .update(let update):
                try checkDates(of: update.content, update.timestamp)
            case .end(let end):
                try checkDates(of: end.content, end.timestamp, end.dismissalPolicy.date)
            }
        }
        if let body = try bodies.decode(StartActivityBody.self) {
            try checkDates(of: body.request.content, body.request.start)
            try bodies.rules.start(body.request)
        }
        if let body = try bodies.decode(StartOrUpdateBody.self) {
            try checkDates(of: body.request.content, body.request.start, body.timestamp, body.end?.date)
        }
        if let update = try bodies.decode(ContentUpdate.self) {
            try checkDates(of: update.content, update.timestamp)
            try bodies.rules.apply(.update(update))
        }
        if let end = try bodies.decode(EndRequest.self) {
            try checkDates(of: end.content, end.timestamp, end.dismissalPolicy.date)
            try bodies.rules.apply(.end(end))
        }
        // An app's users and its sends (docs/audiences.md): what decodes is checked as the
        // routes check it, and refused only with invalidRequest.
        if let user = try bodies.decode(PutAppUserBody.self) {
            try refusedOnlyAsInvalid { _ = try user.checked() }
        }
        if let send = try bodies.decode(SendBody.self) {
            try checkDates(of: send.content, send.at, send.endAt, send.dismissAt, send.start, send.renewUntil, send.timestamp, send.dismissalPolicy?.date)
            try refusedOnlyAsInvalid { try send.check(now: Date(timeIntervalSince1970: 1_795_000_000)) }
        }
        if let move = try bodies.decode(MoveSendBody.self) {
            try checkDates(of: nil, move.at)
        }
        // Apps that ship (docs/installations.md): a client key's name, an installation's
        // registration and its sign-in, refused only with invalidRequest, within their limits.
        if let key = try bodies.decode(CreateClientKeyBody.self) {
            try refusedOnlyAsInvalid {
                let name = try key.checkedName()
                guard name.utf8.count <= ClientKey.maximumName else { throw FuzzFailure("took a name of \(name.utf8.count) bytes") }
            }
        }
        if let registration = try bodies.decode(RegisterInstallationBody.self) {
            try refusedOnlyAsInvalid {
                try registration.check()
                guard (registration.tags ?? [:]).count <= InstallationLimits.tags, registration.userIdSignature == nil || registration.userId != nil else {
                    throw FuzzFailure("took \(registration)")
                }
            }
        }
        if let signIn = try bodies.decode(InstallationUserBody.self) {
            try refusedOnlyAsInvalid {
                if let userId = signIn.userId { try AppUser.checkExternalId(userId) }
                if let tags = signIn.tags { try AppUser.checkTags(tags) }
            }
        }
        // A single start, update or end given `at` (docs/audiences.md, "Schedules").
        if let (start, at) = try bodies.decodeScheduled(StartActivityBody.self) {
            try checkDates(of: start.request.content, start.request.start, at)
        }
        if let (update, at) = try bodies.decodeScheduled(ContentUpdate.self) {
            try checkDates(of: update.content, update.timestamp, at)
        }
        if let (end, at) = try bodies.decodeScheduled(EndRequest.self) {
            try checkDates(of: end.content, end.timestamp, end.dismissalPolicy.date, at)
        }
    }
}

/// Runs a check that may refuse what it is given, only ever with `invalidRequest`.
private func refusedOnlyAsInvalid(_ check: () throws -> Void) throws(FuzzFailure) {
    do {
        try check()
    } catch let error as IsletError {
        try expect(error.reason == .invalidRequest, "refused with \(error.reason): \(error.message)")
    } catch {
        throw FuzzFailure("refused with \(error)")
    }
}

/// A device token a body carries is registered only when it is one (`PhoneToken.validate`:
/// hexadecimal, an even count of 64 to 200), and refused with `invalidRequest` otherwise.
private func checkDeviceToken(_ token: String) throws(FuzzFailure) {
    do throws(IsletError) {
        try PhoneToken.validate(token)
    } catch {
        return try expect(error.reason == .invalidRequest, "refused a device token with \(error.reason)")
    }
    try expect(
        (64...200).contains(token.utf8.count) && token.utf8.allSatisfy { $0 < 0x80 && Character(Unicode.Scalar($0)).isHexDigit },
        "took the device token \(token.debugDescription)"
    )
}

/// `JSONSyntax.parse` (what the server reads bodies with) refuses exactly what `check` refuses,
/// and reads what Foundation's decoder reads as a `JSONValue`: the same value, the same numbers.
private func checkParseAgreesWithFoundation(_ data: Data) throws(FuzzFailure) {
    let (parsed, checked) = data.withUnsafeBytes { bytes in
        (Result { () throws(JSONSyntax.Failure) in try JSONSyntax.parse(bytes) }, Result { () throws(JSONSyntax.Failure) in try JSONSyntax.check(bytes) })
    }
    switch (parsed, checked) {
    case (.success(let value), .success):
        guard let foundation = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw FuzzFailure("JSONSyntax.parse read \(value) where Foundation reads nothing")
        }
        try expect(sameReading(value, foundation), "JSONSyntax.parse read \(value), Foundation \(foundation)")
    case (.failure(let parseFailure), .failure(let checkFailure)):
        try expect(parseFailure == checkFailure, "parse refused with \(parseFailure), check with \(checkFailure)")
    case (.success, .failure(let failure)):
        throw FuzzFailure("parse read a text check refuses: \(failure)")
    case (.failure(let failure), .success):
        throw FuzzFailure("parse refused a text check accepts: \(failure)")
    }
}

/// Whether `parse` and Foundation read the same value. Beyond 2⁵³, where Foundation's decoder
/// truncates a fraction to a whole number and `parse` reads the nearest `Double`, a number may be
/// `.integer` on one side and `.number` on the other, no further apart than the `Double`'s step.
private func sameReading(_ parsed: JSONValue, _ foundation: JSONValue) -> Bool {
    switch (parsed, foundation) {
    case (.integer(let whole), .number(let number)), (.number(let number), .integer(let whole)):
        return number.magnitude >= 0x1p53 && (Double(whole) - number).magnitude <= number.ulp
    case (.array(let left), .array(let right)):
        return left.count == right.count && zip(left, right).allSatisfy(sameReading)
    case (.object(let left), .object(let right)):
        return left.count == right.count && left.allSatisfy { key, value in right[key].map { sameReading(value, $0) } ?? false }
    default:
        return parsed == foundation
    }
}

/// One body decoded as each type, and the activity what decodes is applied to.
private struct RequestBodies {
    let bytes: Data
    var rules = RulesRun()

    /// The body as `type`, or `nil` when it is refused with a reason a client is told.
    @discardableResult
    mutating func decode<T: Decodable>(_ type: T.Type) throws(FuzzFailure) -> T? {
        try decoded(type) { raw throws(IsletError) in try WireFormat.decodeRequest(type, from: raw) }
    }

    /// A single start's, update's or end's body with its `at` (`decodeScheduledRequest`).
    mutating func decodeScheduled<T: Decodable>(_ type: T.Type) throws(FuzzFailure) -> (T, at: Date?)? {
        try decoded(type) { raw throws(IsletError) in try WireFormat.decodeScheduledRequest(type, from: raw) }
    }

    private func decoded<T, Body>(_ type: T.Type, _ decode: (UnsafeRawBufferPointer) throws(IsletError) -> Body) throws(FuzzFailure) -> Body? {
        let decoded = bytes.withUnsafeBytes { raw in
            Result { () throws(IsletError) in try decode(raw) }
        }
        switch decoded {
        case .success(let body):
            return body
        case .failure(let error):
            try expect(
                [.invalidRequest, .malformedJSON].contains(error.reason) && !error.message.isEmpty,
                "a \(type) body refused with \(error.reason.rawValue): \(error.message)"
            )
            return nil
        }
    }
}

/// Every date a decoded body carries is one the server accepts, and its relevance is a number.
private func checkDates(of content: ActivityContent?, _ dates: Date?...) throws(FuzzFailure) {
    for date in dates + [content?.staleDate] {
        guard let seconds = date?.timeIntervalSince1970 else { continue }
        try expect(WireFormat.isAcceptedDate(seconds), "a body was accepted with the date \(seconds)")
    }
    if let content {
        try expect(content.relevanceScore.isFinite, "a body was accepted with relevance \(content.relevanceScore)")
    }
}

extension DismissalPolicy {
    /// The date of `.after`.
    var date: Date? {
        if case .after(let date) = self { date } else { nil }
    }
}
