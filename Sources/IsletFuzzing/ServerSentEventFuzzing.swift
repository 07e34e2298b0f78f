import Foundation
import IsletCore

extension FuzzTarget {
    /// A Server-Sent Events stream through `ServerSentEventParser`, as `IsletClient.events`
    /// reads one: the messages and comments do not depend on how the bytes were cut into
    /// reads (whole, byte by byte, or in pieces the input sizes); names and data hold no line
    /// break the stream split on, and an event is never unnamed ("message" when absent or
    /// empty, as the HTML standard says). Each message's data is decoded as an `Event`, which
    /// refuses or decodes, never traps.
    public static let serverSentEvents = FuzzTarget(name: "server-sent-events") { data throws(FuzzFailure) in
        let bytes = [UInt8](data)
        let whole = parse([bytes[...]])
        let bytewise = parse(bytes.indices.map { bytes[$0...$0] })
        try expect(bytewise == whole, "byte by byte: \(bytewise.0) \(bytewise.1), at once: \(whole.0) \(whole.1)")
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + 1 + Int(bytes[start] % 7))
            pieces.append(bytes[start..<end])
            start = end
        }
        let chunked = parse(pieces)
        try expect(chunked == whole, "in pieces: \(chunked.0) \(chunked.1), at once: \(whole.0) \(whole.1)")
        let decoder = WireFormat.decoder()
        for message in whole.0 {
            try expect(!message.event.isEmpty, "an unnamed event: \(message)")
            for text in [message.event, message.data, message.id ?? ""] {
                try expect(!text.contains("\r"), "a carriage return survived in \(message)")
            }
            try expect(!message.event.contains("\n") && !(message.id ?? "").contains("\n"), "a line feed in a name: \(message)")
            _ = try? decoder.decode(Event.self, from: Data(message.data.utf8))
        }
    }
}

/// The messages and comments a parser makes of `reads`, fed in order.
private func parse(_ reads: [ArraySlice<UInt8>]) -> ([ServerSentEvent], [String]) {
    var parser = ServerSentEventParser()
    var messages: [ServerSentEvent] = []
    var comments: [String] = []
    for read in reads {
        messages += parser.feed(read)
        comments += parser.takeComments()
    }
    return (messages, comments)
}
