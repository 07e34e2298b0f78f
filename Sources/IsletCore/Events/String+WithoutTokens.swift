import Foundation

// What a reader without a key sees of a phone's token or a broadcast channel id, wherever Islet
// wrote one into text: a delivery's target and note, the APNs log's path and detail. A key
// holder sees them as they were written (a token as logs show it: its first and last 8
// characters, `PhoneToken.shorten`).

extension String {
    /// The text with every token and channel id in it cut to its first 8 characters and "…":
    /// enough to tell two phones apart, not to push to either. One rule for every kind of token:
    ///
    /// - an APNs device token: a run of 16 or more hexadecimal digits;
    /// - an FCM registration token or a Firebase installation ID (22 characters): a run of 22 or
    ///   more of base64url's characters and `:` holding a digit (which no word of Islet's own
    ///   does), but a UUID (an activity's id is no secret);
    /// - a token of any kind as logs show it (`PhoneToken.shorten`): 8 of those characters, "…",
    ///   8 or more;
    /// - a channel id: 16 or more base64 characters after "channel " or "channels/".
    public var withoutTokens: String {
        let scalars = Array(unicodeScalars)
        var shown = ""
        var index = 0
        while index < scalars.count {
            if let id = Self.channelId(in: scalars, at: index) {
                shown.unicodeScalars.append(contentsOf: scalars[index..<id.lowerBound])
                shown += Self.cut(String(String.UnicodeScalarView(scalars[id])))
                index = id.upperBound
            } else if Self.isTokenCharacter(scalars[index]) {
                let token = Self.token(in: scalars, at: index)
                let text = String(String.UnicodeScalarView(scalars[token.range]))
                shown += token.secret ? Self.cut(text) : text
                index = token.range.upperBound
            } else {
                shown.unicodeScalars.append(scalars[index])
                index += 1
            }
        }
        return shown
    }

    /// The text without tokens (`withoutTokens`), cut to its first `bytes` UTF-8 bytes (at a
    /// character's end). A token the cut splits — here, or in text an earlier cut kept (a text
    /// of `bytes` or more is taken for one) — is a run of its characters at the end, cut to 8
    /// too when it may be one (hexadecimal, or holding a digit): shorter than 16 hexadecimal
    /// digits or 22 characters, `withoutTokens` would not know it.
    public func withoutTokens(cutTo bytes: Int) -> String {
        let shown = withoutTokens
        guard utf8.count >= bytes || shown.utf8.count > bytes else { return shown }
        var cut = ""
        var used = 0
        for character in shown {
            let size = character.utf8.count
            guard used + size <= bytes else { break }
            cut.append(character)
            used += size
        }
        let scalars = Array(cut.unicodeScalars)
        let tail = scalars.reversed().prefix { Self.isTokenCharacter($0) }
        // What may be the start of a token: hexadecimal digits (APNs), or holding a digit (FCM).
        guard tail.count > 8, tail.allSatisfy(Self.isHex) || tail.contains(where: { ("0"..."9").contains($0) }) else { return cut }
        // Its first 8 characters (ASCII, a byte each) and "…" (3 bytes), within `bytes` in all.
        let start = scalars.count - tail.count
        let kept = max(0, min(8, bytes - (used - tail.count) - 3))
        return String(String.UnicodeScalarView(scalars[..<start])) + String(String.UnicodeScalarView(scalars[start..<(start + kept)])) + "…"
    }

    /// A token or a channel id as a reader without a key sees it: its first 8 characters and "…".
    public static func cut(_ secret: some StringProtocol) -> String {
        secret.prefix(8) + "…"
    }

    /// The token at `start` and how far it goes, or — when none starts there — how far the text
    /// that is no token goes: a UUID whole, otherwise one character (a token may start after it).
    private static func token(in scalars: [Unicode.Scalar], at start: Int) -> (range: Range<Int>, secret: Bool) {
        let hex = run(in: scalars, from: start, while: isHex)
        if hex - start >= 16 { return (start..<hex, true) }
        let end = run(in: scalars, from: start, while: isTokenCharacter)
        if end - start == 8, end < scalars.count, scalars[end] == "…" {
            let tail = run(in: scalars, from: end + 1, while: isTokenCharacter)
            if tail - end - 1 >= 8 { return (start..<tail, true) }
        }
        let word = scalars[start..<end]
        if isUUID(word) { return (start..<end, false) }
        if word.count >= 22, word.contains(where: { ("0"..."9").contains($0) }) { return (start..<end, true) }
        return (start..<start + 1, false)
    }

    /// `8-4-4-4-12` hexadecimal digits.
    private static func isUUID(_ word: ArraySlice<Unicode.Scalar>) -> Bool {
        let groups = word.split(separator: "-", omittingEmptySubsequences: false)
        return groups.map(\.count) == [8, 4, 4, 4, 12] && groups.allSatisfy { $0.allSatisfy(isHex) }
    }

    /// The channel id that follows "channel " or "channels/" at `start`, if one does.
    private static func channelId(in scalars: [Unicode.Scalar], at start: Int) -> Range<Int>? {
        for lead in ["channel ", "channels/"] {
            let lead = Array(lead.unicodeScalars)
            guard start + lead.count <= scalars.count,
                zip(scalars[start..<start + lead.count], lead).allSatisfy({ lowercased($0) == $1 })
            else { continue }
            let id = start + lead.count
            var end = run(in: scalars, from: id, while: isBase64)
            // Padding ends an id: a path may go on after it ("…/channels/<id>/broadcast").
            if let padding = scalars[id..<end].firstIndex(of: "=") { end = run(in: scalars, from: padding, while: { $0 == "=" }) }
            return end - id >= 16 ? id..<end : nil
        }
        return nil
    }

    private static func run(in scalars: [Unicode.Scalar], from start: Int, while matches: (Unicode.Scalar) -> Bool) -> Int {
        var end = start
        while end < scalars.count, matches(scalars[end]) { end += 1 }
        return end
    }

    private static func lowercased(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        ("A"..."Z").contains(scalar) ? Unicode.Scalar(scalar.value + 32)! : scalar
    }

    private static func isHex(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (("0"..."9").contains(scalar) || ("a"..."f").contains(scalar) || ("A"..."F").contains(scalar))
    }

    /// What an FCM registration token (`<installation id>:APA91b…`), a Firebase installation ID
    /// or an APNs token is written with: base64url's alphabet and `:`.
    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-_:".unicodeScalars.contains(scalar))
    }

    private static func isBase64(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "+/=".unicodeScalars.contains(scalar))
    }
}
