import Foundation

extension Substring {
    /// The text without surrounding white space, as `trimmingCharacters(in: .whitespaces)`
    /// gives it. Text that starts and ends with printable ASCII — a key or a token as clients
    /// send them — has nothing to trim and is taken as is, without Foundation's Unicode
    /// trimming, which was a few per cent of a request's handling (API keys, provider tokens).
    public func trimmedOfWhitespace() -> String {
        func isPlain(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x7F }
        if let first = utf8.first, let last = utf8.last, isPlain(first), isPlain(last) {
            return String(self)
        }
        return trimmingCharacters(in: .whitespaces)
    }
}
