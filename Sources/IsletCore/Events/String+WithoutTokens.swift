import Foundation

// What a reader without a key sees of a push token or a broadcast channel id, wherever Islet
// wrote one into text: a delivery's target and note, the APNs log's path and detail. A key
// holder sees them as they were written (a token as logs show it: its first and last 8 digits).

extension String {
    /// The text with every push token and channel id in it cut to its first 8 characters and
    /// "…": enough to tell two phones apart, not to push to either. A token is a run of 16 or
    /// more hexadecimal digits, or a token as logs show it (`PhoneToken.shorten`: 8 digits, "…",
    /// 8 digits); a channel id is 16 or more base64 characters after "channel " or "channels/".
    public var withoutTokens: String {
        let scalars = Array(unicodeScalars)
        var shown = ""
        var index = 0
        while index < scalars.count {
            if let id = Self.channelId(in: scalars, at: index) {
                shown.unicodeScalars.append(contentsOf: scalars[index..<id.lowerBound])
                shown += Self.cut(String(String.UnicodeScalarView(scalars[id])))
                index = id.upperBound
            } else if Self.isHex(scalars[index]) {
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

    /// A token or a channel id as a reader without a key sees it: its first 8 characters and "…".
    public static func cut(_ secret: some StringProtocol) -> String {
        secret.prefix(8) + "…"
    }

    /// The hexadecimal run at `start`, joined to a second one by "…" when it is a token as logs
    /// show it, and whether it is a token.
    private static func token(in scalars: [Unicode.Scalar], at start: Int) -> (range: Range<Int>, secret: Bool) {
        let end = run(in: scalars, from: start, while: isHex)
        if end - start >= 16 { return (start..<end, true) }
        if end - start == 8, end < scalars.count, scalars[end] == "…" {
            let tail = run(in: scalars, from: end + 1, while: isHex)
            if tail - end - 1 >= 8 { return (start..<tail, true) }
        }
        return (start..<end, false)
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

    private static func isBase64(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "+/=".unicodeScalars.contains(scalar))
    }
}
