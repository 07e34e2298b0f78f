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
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard IPAddressClass.parse(host)?.count == 16 else { throw refuse("\"[\(host.prefix(100))]\" is not an IPv6 address.") }
        }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        guard (1...65_535).contains(port) else { throw refuse("port \(port) is not between 1 and 65535.") }
        self.text = text
        self.host = host.lowercased()
        self.port = port
        self.usesTLS = scheme == "https"
        self.address = IPAddressClass.parse(host)
        if !usesTLS {
            let loopback = self.host == "localhost" || address.map { IPAddressClass.of($0) == .loopback } == true
            guard loopback else { throw refuse("http:// is allowed only to a loopback address, for development; use https://.") }
        } else if let address, let refusal = Self.refusal(of: address, allowPrivateNetworks: allowPrivateNetworks, plainHTTP: false) {
            throw refuse(refusal)
        }
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

    /// The class of a 4- or 16-byte address; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
    /// and a NAT64 one (`64:ff9b::a.b.c.d`) are classed by their IPv4 address.
    public static func of(_ address: [UInt8]) -> IPAddressClass {
        if address.count == 16 {
            let mapped = address[0..<10].allSatisfy { $0 == 0 } && address[10] == 0xFF && address[11] == 0xFF
            let nat64 = address[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]
            if mapped || nat64 { return of(Array(address[12..<16])) }
            if address.allSatisfy({ $0 == 0 }) { return .unspecified }
            if address[0..<15].allSatisfy({ $0 == 0 }) && address[15] == 1 { return .loopback }
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
