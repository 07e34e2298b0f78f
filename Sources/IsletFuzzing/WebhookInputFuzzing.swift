import Foundation
import IsletCore

extension FuzzTarget {
    /// What a caller hands the webhooks: an endpoint's body (its URL and events), a replay's
    /// `since`, a listening session's messages from the laptop, and the address a name resolves
    /// to. Each is taken or refused with `invalidRequest`, never trapped on; a URL taken is
    /// `https://`, or `http://` to loopback, with a port in range and no credentials, and an
    /// address written in it — however spelled (`0x7f.1`, `2130706433`: what `inet_aton` reads
    /// it as) — is one `refusal(of:)` lets through; a `since` taken is an event id
    /// above 0 or a time within the accepted range; an address's text reads back to its bytes;
    /// what the attempt log keeps of any text is at most 256 bytes and holds no APNs token.
    public static let webhookInputs = FuzzTarget(name: "webhook-inputs") { data throws(FuzzFailure) in
        let decoder = WireFormat.decoder()
        if let body = try? decoder.decode(CreateWebhookBody.self, from: data) {
            try checkURL(body.url)
            try checkEvents(body.events ?? [])
        }
        if let body = try? decoder.decode(UpdateWebhookBody.self, from: data) {
            if let url = body.url { try checkURL(url) }
            if let events = body.events { try checkEvents(events) }
        }
        if let body = try? decoder.decode(ReplayWebhookBody.self, from: data) {
            do {
                let since = try body.parsed()
                try expect((since.event ?? 1) > 0, "took the event id \(String(describing: since.event))")
                if let time = since.time {
                    try expect(WireFormat.isAcceptedDate(time.timeIntervalSince1970), "took the time \(time)")
                }
                try expect((since.event == nil) != (since.time == nil), "since is both or neither: \(since)")
            } catch let error as IsletError {
                try expect(error.reason == .invalidRequest, "refused since with \(error.reason)")
            } catch {
                throw FuzzFailure("\(error)")
            }
        }
        if let message = try? decoder.decode(WebhookListenMessage.self, from: data) {
            // What the server writes back goes through the encoder whole.
            try expect((try? WireFormat.encoder().encode(message)) != nil, "a listening message that decodes does not encode")
        }
        if let text = String(data: data, encoding: .utf8) {
            // A receiver's answer as the attempt log keeps it: at most 256 bytes, no token in it.
            let kept = WebhookAttempt.kept(text)
            try expect(kept.utf8.count <= WebhookAttempt.keptBytes, "kept \(kept.utf8.count) bytes of an answer")
            var run = 0
            for scalar in kept.unicodeScalars {
                run = scalar.isASCII && scalar.properties.isASCIIHexDigit ? run + 1 : 0
                try expect(run < 16, "kept a run of 16 hexadecimal digits: \(kept.debugDescription)")
            }
        }
        if let text = String(data: data, encoding: .utf8), text.utf8.count <= 100 {
            if let address = IPAddressClass.parse(text) {
                try expect([4, 16].contains(address.count), "an address of \(address.count) bytes")
                try expect(IPAddressClass.parse(IPAddressClass.text(address)) == address, "\(text.debugDescription) does not read back")
            }
        }
    }
}

/// A webhook URL is taken only as docs/webhooks.md says, with private networks allowed or not.
private func checkURL(_ text: String) throws(FuzzFailure) {
    for allowPrivate in [false, true] {
        let url: WebhookURL
        do {
            url = try WebhookURL(text, allowPrivateNetworks: allowPrivate)
        } catch let error as IsletError {
            try expect(error.reason == .invalidRequest, "refused a URL with \(error.reason)")
            continue
        } catch {
            throw FuzzFailure("\(error)")
        }
        try expect(text.utf8.count <= WebhookURL.maximumLength, "took a URL of \(text.utf8.count) bytes")
        try expect((1...65_535).contains(url.port), "took port \(url.port)")
        try expect(!url.host.isEmpty, "took a URL without a host: \(text.debugDescription)")
        let lowered = text.lowercased()
        try expect(url.usesTLS ? lowered.hasPrefix("https:") : lowered.hasPrefix("http:"), "took the scheme of \(text.debugDescription)")
        if let address = url.address {
            try expect(url.refusal(of: address, allowPrivateNetworks: allowPrivate) == nil, "took \(text.debugDescription), whose address it refuses")
        } else if !url.usesTLS {
            try expect(url.host == "localhost", "took http:// to the name \(url.host)")
        }
        // A host a resolver reads as an IPv4 address is that address, never a name: as the
        // WHATWG parser reads it, and as glibc's inet_aton does where it reads it.
        try expect(url.address != nil || !IPAddressClass.endsInANumber(url.host), "took \(url.host.debugDescription) for a name")
        var parsed = in_addr()
        if !url.host.contains(":"), inet_aton(url.host, &parsed) != 0 {
            let read = withUnsafeBytes(of: &parsed) { Array($0) }
            try expect(url.address == read, "\(url.host.debugDescription) is \(read) to inet_aton, \(String(describing: url.address)) here")
        }
    }
}

/// An endpoint's events are known names, families or `*`; anything else is refused.
private func checkEvents(_ names: [String]) throws(FuzzFailure) {
    do {
        let selection = try WebhookEventSelection(names)
        let families = Set(WebhookEventType.allCases.map { String($0.family) })
        for name in selection.names {
            let known = name == "*" || WebhookEventType(rawValue: name) != nil || (name.hasSuffix(".*") && families.contains(String(name.dropLast(2))))
            try expect(known, "took the event name \(name.debugDescription)")
        }
    } catch let error as IsletError {
        try expect(error.reason == .invalidRequest, "refused events with \(error.reason)")
    } catch {
        throw FuzzFailure("\(error)")
    }
}
