extension Sequence<UInt8> {
    /// The bytes as lowercase hexadecimal, two digits each: key hashes and push tokens.
    ///
    /// Written out by hand because it runs on every request (an API key's hash), where
    /// `String(format: "%02x")` per byte cost more than the hash itself.
    public var hexEncoded: String {
        let digits = Array("0123456789abcdef".utf8)
        var utf8: [UInt8] = []
        utf8.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            utf8.append(digits[Int(byte >> 4)])
            utf8.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: utf8, as: UTF8.self)
    }
}
