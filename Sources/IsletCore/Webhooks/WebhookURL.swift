import Foundation

/// Where a webhook endpoint's requests go, checked where the URL enters (the API, the CLI, a
/// backup) and again, address by address, when a request connects (`WebhookURL.refusal(of:)`):
/// `https://`, or `http://` to a loopback address for development; never a private, loopback,
/// link-local, shared (carrier-grade NAT), multicast, unspecified or reserved address unless
/// the admin allows private networks (`webhooks.allowPrivateNetworks`). A name is checked by
/// what it resolves to at connection time, so one that resolves to 127.0.0.1 later is refused
/// then (DNS rebinding).
public struct WebhookURL: Sendable, Hashable, CustomStringConvertible {
    /// The URL as given, once checked.
    public let text: String
    public let host: String
    public let port: Int
    public let usesTLS: Bool
    /// The host is an address, not a name.
    public let address: [UInt8]?

    /// The longest URL accepted.
    public static let maximumLength = 2_048

    public var description: String { text }

    /// Checks `text`'s form and, for an address written in it, the address.
    public init(_ text: String, allowPrivateNetworks: Bool) throws {
        func refuse(_ why: String) -> IsletError { IsletError(.invalidRequest, "url: \(why)") }
        guard text.utf8.count <= Self.maximumLength else { throw refuse("longer than \(Self.maximumLength) bytes.") }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              var host = components.host, !host.isEmpty
        else { throw refuse("\"\(text.prefix(100))\" is not an absolute URL with a host.") }
        guard scheme == "https" || scheme == "http" else { throw refuse("the scheme must be https (or http to a loopback address).") }
        guard components.user == nil, components.password == nil else { throw refuse("credentials in the URL are not allowed; the requests are signed.") }
        guard components.fragment == nil else { throw refuse("a fragment (#…) is not sent; leave it out.") }
        let address: [UInt8]?
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard let v6 = IPAddressClass.parse(host), v6.count == 16 else { throw refuse("\"[\(host.prefix(100))]\" is not an IPv6 address.") }
            address = v6
        } else if let forbidden = host.unicodeScalars.first(where: Self.isForbiddenInAName) {
            // What no name holds (the WHATWG URL standard's forbidden domain code points): a
            // resolver given `127.0.0.1\0.example.com` reads up to the NUL.
            throw refuse("the host holds U+\(String(forbidden.value, radix: 16, uppercase: true)), which no name does.")
        } else if IPAddressClass.endsInANumber(host) {
            // A host a resolver reads as an IPv4 address, however it is spelled.
            guard let v4 = IPAddressClass.parseIPv4(host) else { throw refuse("\"\(host.prefix(100))\" is not an IPv4 address, nor a name.") }
            address = v4
        } else {
            address = nil
        }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        guard (1...65_535).contains(port) else { throw refuse("port \(port) is not between 1 and 65535.") }
        self.text = text
        self.host = host.lowercased()
        self.port = port
        self.usesTLS = scheme == "https"
        self.address = address
        if !usesTLS {
            let loopback = self.host == "localhost" || address.map { IPAddressClass.of($0) == .loopback } == true
            guard loopback else { throw refuse("http:// is allowed only to a loopback address, for development; use https://.") }
        } else if let address, let refusal = Self.refusal(of: address, allowPrivateNetworks: allowPrivateNetworks, plainHTTP: false) {
            throw refuse(refusal)
        }
    }

    /// A code point no host name holds: controls, space, `%` and the URL's own delimiters.
    private static func isForbiddenInAName(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x21 || scalar.value == 0x7F || "#%/:<>?@[\\]^|".unicodeScalars.contains(scalar)
    }

    /// Why a request to this URL may not connect to `address` (4 or 16 bytes), or `nil`.
    public func refusal(of address: [UInt8], allowPrivateNetworks: Bool) -> String? {
        Self.refusal(of: address, allowPrivateNetworks: allowPrivateNetworks, plainHTTP: !usesTLS)
    }

    private static func refusal(of address: [UInt8], allowPrivateNetworks: Bool, plainHTTP: Bool) -> String? {
        let kind = IPAddressClass.of(address)
        switch kind {
        case .global: return plainHTTP ? "http:// is allowed only to a loopback address." : nil
        case .loopback where plainHTTP: return nil
        case .loopback, .private, .linkLocal, .shared:
            return allowPrivateNetworks ? nil : "\(IPAddressClass.text(address)) is a \(kind.rawValue) address; webhooks.allowPrivateNetworks allows it."
        case .multicast, .unspecified, .reserved:
            return "\(IPAddressClass.text(address)) is a \(kind.rawValue) address, which no request goes to."
        }
    }
}

/// What an IP address is, for the webhook URL's checks.
public enum IPAddressClass: String, Sendable {
    case global
    case loopback
    case `private`
    case linkLocal = "link-local"
    case shared = "shared (carrier-grade NAT)"
    case multicast
    case unspecified
    case reserved

    /// The class of a 4- or 16-byte address. An IPv6 address that carries an IPv4 one is classed
    /// by it: IPv4-mapped (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`), IPv4-compatible
    /// (`::a.b.c.d`, `::/96` but `::` and `::1`) and 6to4 (`2002:aabb:ccdd::`, `2002::/16`), each
    /// of which a host may route to that IPv4 address.
    public static func of(_ address: [UInt8]) -> IPAddressClass {
        if address.count == 16 {
            if address.allSatisfy({ $0 == 0 }) { return .unspecified }
            if address[0..<15].allSatisfy({ $0 == 0 }) && address[15] == 1 { return .loopback }
            if let carried = carriedIPv4(address) { return of(carried) }
            if address[0] == 0xFF { return .multicast }
            if address[0] & 0xFE == 0xFC { return .private }                       // fc00::/7
            if address[0] == 0xFE && address[1] & 0xC0 == 0x80 { return .linkLocal } // fe80::/10
            if address[0] == 0xFE && address[1] & 0xC0 == 0xC0 { return .private }   // fec0::/10, site-local
            return .global
        }
        guard address.count == 4 else { return .reserved }
        let (a, b) = (address[0], address[1])
        switch a {
        case 0: return .unspecified
        case 10: return .private
        case 127: return .loopback
        case 100 where b & 0xC0 == 64: return .shared                  // 100.64.0.0/10
        case 169 where b == 254: return .linkLocal
        case 172 where b & 0xF0 == 16: return .private                 // 172.16.0.0/12
        case 192 where b == 168: return .private
        case 192 where b == 0 && address[2] == 0: return .reserved     // 192.0.0.0/24
        case 198 where b & 0xFE == 18: return .reserved                // 198.18.0.0/15, benchmarking
        case 224...239: return .multicast
        case 240...255: return .reserved
        default: return .global
        }
    }

    /// The IPv4 address an IPv6 one carries (mapped, NAT64, compatible, 6to4), if it does.
    static func carriedIPv4(_ address: [UInt8]) -> [UInt8]? {
        let mapped = address[0..<10].allSatisfy { $0 == 0 } && address[10] == 0xFF && address[11] == 0xFF
        let nat64 = address[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]
        let compatible = address[0..<12].allSatisfy { $0 == 0 }
        if mapped || nat64 || compatible { return Array(address[12..<16]) }
        if address[0] == 0x20 && address[1] == 0x02 { return Array(address[2..<6]) }
        return nil
    }

    /// Whether a URL's host is an IPv4 address to a resolver, as the WHATWG URL standard's
    /// "ends in a number" says (what browsers and `inet_aton` read as one): its last label, a
    /// trailing dot left out, is decimal digits or `0x` and hexadecimal digits.
    public static func endsInANumber(_ host: String) -> Bool {
        var labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count > 1, labels.last?.isEmpty == true { labels.removeLast() }
        guard let last = labels.last, !last.isEmpty else { return false }
        if last.utf8.allSatisfy({ (0x30...0x39).contains($0) }) { return true }
        let lowered = last.lowercased()
        return lowered.hasPrefix("0x") && lowered.dropFirst(2).utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// An IPv4 address spelled as a resolver reads one (the WHATWG URL standard's IPv4 parser,
    /// which agrees with `inet_aton`): one to four parts, each decimal, octal (a leading `0`)
    /// or hexadecimal (`0x`), the last filling the bytes left — `2130706433`, `0x7f.1`,
    /// `0177.0.0.1` and `127.1` are all 127.0.0.1 — and a trailing dot; `nil` when it is not one.
    public static func parseIPv4(_ host: String) -> [UInt8]? {
        var parts = host.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count > 1, parts.last?.isEmpty == true { parts.removeLast() }
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let number = ipv4Number(part) else { return nil }
            numbers.append(number)
        }
        guard numbers.dropLast().allSatisfy({ $0 <= 255 }) else { return nil }
        let room = UInt64(1) << (8 * UInt64(5 - numbers.count))
        guard numbers[numbers.count - 1] < room else { return nil }
        var value = numbers[numbers.count - 1]
        for (index, number) in numbers.dropLast().enumerated() { value += number << (8 * UInt64(3 - index)) }
        return [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    /// One part of an IPv4 address: decimal, octal after a leading `0`, hexadecimal after `0x`
    /// (nothing after it is 0); `nil` for an empty part, another digit, or a number past 2³².
    private static func ipv4Number(_ part: Substring) -> UInt64? {
        guard !part.isEmpty else { return nil }
        var digits = part.lowercased()[...]
        var radix: UInt64 = 10
        if digits.hasPrefix("0x") {
            radix = 16
            digits = digits.dropFirst(2)
        } else if digits.count > 1, digits.hasPrefix("0") {
            radix = 8
            digits = digits.dropFirst()
        }
        var value: UInt64 = 0
        for character in digits.utf8 {
            let digit: UInt64
            switch character {
            case 0x30...0x39: digit = UInt64(character - 0x30)
            case 0x61...0x66: digit = UInt64(character - 0x61 + 10)
            default: return nil
            }
            guard digit < radix else { return nil }
            value = value * radix + digit
            if value > UInt64(UInt32.max) { return nil }
        }
        return value
    }

    /// The bytes of an address written as text (IPv4 dotted, IPv6), or `nil` for a name.
    public static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// The address as text.
    public static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        let written = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard written != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
