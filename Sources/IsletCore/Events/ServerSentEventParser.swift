/// One message of a Server-Sent Events stream.
public struct ServerSentEvent: Hashable, Sendable {
    /// The `id:` field, if the message had one.
    public var id: String?
    /// The `event:` field; `message` when absent or empty, as browsers do.
    public var event: String
    /// The `data:` lines, joined with newlines.
    public var data: String
}

/// Splits a Server-Sent Events byte stream into messages, as the HTML standard's parser does:
/// lines end with LF, CR or CRLF; a blank line ends a message; `:` starts a comment.
///
/// The wire format of `/v1/events`, pure like the rest of the core: `IsletClient` reads its
/// streams with it, and the fuzz build reaches it without an HTTP client.
public struct ServerSentEventParser: Sendable {
    private var line: [UInt8] = []
    private var lastWasCR = false
    private var id: String?
    private var event: String?
    private var data: [String] = []
    /// Comments seen since the last call to `takeComments()` (keep-alives, notices).
    public private(set) var comments: [String] = []

    /// Creates a parser.
    public init() {}

    /// Feeds bytes and returns the messages they complete.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var messages: [ServerSentEvent] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n"), lastWasCR {
                lastWasCR = false
                continue
            }
            lastWasCR = byte == UInt8(ascii: "\r")
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") {
                if let message = endLine() { messages.append(message) }
            } else {
                line.append(byte)
            }
        }
        return messages
    }

    /// Returns and forgets the comments seen so far.
    public mutating func takeComments() -> [String] {
        defer { comments.removeAll() }
        return comments
    }

    private mutating func endLine() -> ServerSentEvent? {
        let text = String(decoding: line, as: UTF8.self)
        line.removeAll(keepingCapacity: true)
        if text.isEmpty {
            defer {
                id = nil
                event = nil
                data.removeAll()
            }
            guard !data.isEmpty else { return nil }
            // An empty `event:` names no type: the standard dispatches it as "message".
            let type = event.flatMap { $0.isEmpty ? nil : $0 } ?? "message"
            return ServerSentEvent(id: id, event: type, data: data.joined(separator: "\n"))
        }
        if text.hasPrefix(":") {
            comments.append(String(text.dropFirst()).trimmingLeadingSpace())
            return nil
        }
        let field: Substring
        var value: Substring
        if let colon = text.firstIndex(of: ":") {
            field = text[..<colon]
            value = text[text.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
        } else {
            field = text[...]
            value = ""
        }
        switch field {
        case "id": id = String(value)
        case "event": event = String(value)
        case "data": data.append(String(value))
        default: break
        }
        return nil
    }
}

extension String {
    fileprivate func trimmingLeadingSpace() -> String {
        first == " " ? String(dropFirst()) : self
    }
}
