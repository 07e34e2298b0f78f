extension Sequence<UInt8> {
    /// The bytes as lowercase hexadecimal, two digits each: key hashes and push tokens.
    ///
    /// Written out by hand because it runs on every request (an API key's hash), where
    /// `String(format: "%02x")` per byte cost more than the hash itself.
    public var hexEncoded: String {
        let bytes = Array(self)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { utf8 in
            let digits: StaticString = "0123456789abcdef"
            digits.withUTF8Buffer { digits in
                for (index, byte) in bytes.enumerated() {
                    utf8[2 * index] = digits[Int(byte >> 4)]
                    utf8[2 * index + 1] = digits[Int(byte & 0x0f)]
                }
            }
            return bytes.count * 2
        }
    }
}
