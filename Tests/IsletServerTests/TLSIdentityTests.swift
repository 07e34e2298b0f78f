import Foundation
import IsletServer
import SwiftASN1
import IsletTestSupport
import Testing
import X509

@Suite("Development certificate", .hangDetector)
struct TLSIdentityTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-tls-\(UUID().uuidString)").path
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    func read(_ name: String) throws -> String {
        try String(contentsOfFile: (directory as NSString).appendingPathComponent(name), encoding: .utf8)
    }

    /// The server certificate: the first of `cert.pem`'s chain.
    func leaf() throws -> Certificate {
        try Certificate(pemDocument: try #require(try PEMDocument.parseMultiple(pemString: try read("cert.pem")).first))
    }

    func serverNames() throws -> [GeneralName] {
        Array(try #require(try leaf().extensions.subjectAlternativeNames))
    }

    @Test func isMadeOnceAndReused() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try TLSIdentity.development(in: directory, host: "127.0.0.1", now: t0)
        #expect(first.authorityPath == (directory as NSString).appendingPathComponent("ca.pem"))
        let (authority, certificate) = (try read("ca.pem"), try read("cert.pem"))
        _ = try TLSIdentity.development(in: directory, host: "127.0.0.1", now: t0.addingTimeInterval(86_400))
        #expect(try read("ca.pem") == authority)
        #expect(try read("cert.pem") == certificate)
        #expect(try serverNames().contains(.dnsName("localhost")))
        let keyMode = try FileManager.default.attributesOfItem(atPath: (directory as NSString).appendingPathComponent("ca-key.pem"))[.posixPermissions] as? Int
        #expect(keyMode == 0o600)
    }

    @Test func aNewHostOrANearExpiryIssuesANewServerCertificateFromTheSameAuthority() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try TLSIdentity.development(in: directory, host: "127.0.0.1", now: t0)
        let (authority, certificate) = (try read("ca.pem"), try read("cert.pem"))
        _ = try TLSIdentity.development(in: directory, host: "islet.example.test", now: t0)
        #expect(try read("ca.pem") == authority)
        #expect(try read("cert.pem") != certificate)
        #expect(try serverNames().contains(.dnsName("islet.example.test")))
        // 825 days of validity; renewed within 30 days of the end.
        let renewed = try read("cert.pem")
        _ = try TLSIdentity.development(in: directory, host: "islet.example.test", now: t0.addingTimeInterval(800 * 86_400))
        #expect(try read("ca.pem") == authority)
        #expect(try read("cert.pem") != renewed)
        #expect(try leaf().notValidAfter > t0.addingTimeInterval(1600 * 86_400))
    }

    @Test func withoutTheAuthoritysKeyANewAuthorityIsMade() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try TLSIdentity.development(in: directory, host: "127.0.0.1", now: t0)
        let authority = try read("ca.pem")
        try FileManager.default.removeItem(atPath: (directory as NSString).appendingPathComponent("ca-key.pem"))
        // Still valid for this host: nothing changes.
        _ = try TLSIdentity.development(in: directory, host: "127.0.0.1", now: t0)
        #expect(try read("ca.pem") == authority)
        // A new host needs a new certificate, which needs the authority's key.
        _ = try TLSIdentity.development(in: directory, host: "::1", now: t0)
        _ = try TLSIdentity.development(in: directory, host: "10.1.2.3", now: t0)
        #expect(try read("ca.pem") != authority)
        #expect(try serverNames().contains(.ipAddress(ASN1OctetString(contentBytes: [10, 1, 2, 3]))))
    }
}
