import Logging

/// Writes every line as one line: control characters in a message or a metadata value — which
/// may come from a client (an icon name, a path, a header) — are written as escapes (`\n`,
/// `\u{1B}`), so no client can forge a log line or recolour a terminal.
struct EscapingLogHandler: ForwardingLogHandler {
    var wrapped: any LogHandler

    init(wrapping handler: any LogHandler) {
        wrapped = handler
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(Self.escaped(event.message.description))"
        event.metadata = event.metadata.map { $0.mapValues(Self.escaped) }
        wrapped.log(event: event)
    }

    /// `text` with every control character (C0, DEL, C1, line and paragraph separators) escaped.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where isControl(scalar): result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    private static func escaped(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .string(let text): .string(escaped(text))
        case .stringConvertible(let value): .string(escaped(value.description))
        case .array(let values): .array(values.map(escaped))
        case .dictionary(let values): .dictionary(values.mapValues(escaped))
        }
    }
}
