import Crypto
import Foundation
import IsletCore
import NIOSSL
import SwiftASN1
import X509

/// The certificate the APNs-compatible endpoint presents.
///
/// With no certificate configured, Islet makes its own and keeps it in `<data>/tls/`: a
/// development certificate authority (`ca.pem`, the file a provider trusts, valid ten years;
/// its key `ca-key.pem`) and a server certificate it signed (`cert.pem`, `key.pem`) for
/// `localhost`, `127.0.0.1` and `::1` plus the host the endpoint listens on (the machine's
/// name when that is every address). The files are reused on later starts, so a provider's
/// trust survives restarts; the server certificate alone is issued again when the host changes
/// or it is within 30 days of expiring.
public struct TLSIdentity: Sendable {
    /// The certificate chain, leaf first, as PEM.
    public var certificateChain: [NIOSSLCertificate]
    /// The server's private key.
    public var privateKey: NIOSSLPrivateKey
    /// The development CA a provider should trust, when Islet made the certificate.
    public var authorityPath: String?

    /// Loads a configured certificate and key (PEM files).
    public static func load(certificate: String, privateKey: String) throws -> TLSIdentity {
        do {
            return TLSIdentity(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificate),
                privateKey: try NIOSSLPrivateKey(file: privateKey, format: .pem), authorityPath: nil
            )
        } catch {
            throw ConfigurationError(key: "apns.certificate", problem: "cannot read \(certificate) and \(privateKey): \(error)")
        }
    }

    /// How long before it expires a certificate is replaced.
    static let renewalMargin: TimeInterval = 30 * 86_400

    /// Loads the development certificate from `directory`, making what is missing, outdated or
    /// not valid for `host` first.
    ///
    /// - Parameters:
    ///   - directory: Where the files live (`<data>/tls`).
    ///   - host: The host the endpoint listens on, added to the certificate's names.
    ///   - now: The current time.
    public static func development(in directory: String, host: String, now: Date = Date()) throws -> TLSIdentity {
        let files = DevelopmentFiles(directory: directory)
        let names = serverNames(host: host)
        if !serverCertificateIsCurrent(files, names: names, now: now) {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
            let authority = try currentAuthority(files, now: now) ?? makeAuthority(files, now: now)
            try issueServerCertificate(files, names: names, authority: authority, now: now)
        }
        return TLSIdentity(
            certificateChain: try NIOSSLCertificate.fromPEMFile(files.certificate),
            privateKey: try NIOSSLPrivateKey(file: files.privateKey, format: .pem), authorityPath: files.authority
        )
    }

    struct DevelopmentFiles {
        let directory: String
        var authority: String { path("ca.pem") }
        var authorityKey: String { path("ca-key.pem") }
        var certificate: String { path("cert.pem") }
        var privateKey: String { path("key.pem") }

        private func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }
    }

    /// The names the server certificate must hold for a provider to reach `host` by them.
    static func serverNames(host: String) -> [GeneralName] {
        var names: [GeneralName] = [
            .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
            .ipAddress(ASN1OctetString(contentBytes: ArraySlice(repeating: 0, count: 15) + [1])),
        ]
        let name: GeneralName?
        if ["", "0.0.0.0", "::"].contains(host) {
            // Every address: providers on other machines reach it by the machine's name.
            let machine = ProcessInfo.processInfo.hostName
            name = machine.isEmpty || machine == "localhost" ? nil : .dnsName(machine)
        } else if let address = IPAddressBytes(host) {
            name = .ipAddress(ASN1OctetString(contentBytes: address[...]))
        } else {
            name = .dnsName(host)
        }
        if let name, !names.contains(name) { names.append(name) }
        return names
    }

    /// Whether `cert.pem` and `key.pem` exist, hold every name, and are not about to expire.
    private static func serverCertificateIsCurrent(_ files: DevelopmentFiles, names: [GeneralName], now: Date) -> Bool {
        guard FileManager.default.fileExists(atPath: files.privateKey),
            let text = try? String(contentsOfFile: files.certificate, encoding: .utf8),
            let leaf = try? PEMDocument.parseMultiple(pemString: text).first,
            let certificate = try? Certificate(pemDocument: leaf),
            let held = try? certificate.extensions.subjectAlternativeNames
        else { return false }
        return certificate.notValidAfter > now.addingTimeInterval(renewalMargin) && names.allSatisfy(held.contains)
    }

    /// The development CA and its key, if both are there and it is not about to expire.
    private static func currentAuthority(
        _ files: DevelopmentFiles, now: Date
    ) throws -> (certificate: Certificate, key: P256.Signing.PrivateKey)? {
        guard let certificateText = try? String(contentsOfFile: files.authority, encoding: .utf8),
            let keyText = try? String(contentsOfFile: files.authorityKey, encoding: .utf8),
            let certificate = try? Certificate(pemEncoded: certificateText),
            let key = try? P256.Signing.PrivateKey(pemRepresentation: keyText),
            certificate.publicKey == Certificate.PublicKey(key.publicKey),
            certificate.notValidAfter > now.addingTimeInterval(renewalMargin)
        else { return nil }
        return (certificate, key)
    }

    private static func makeAuthority(
        _ files: DevelopmentFiles, now: Date
    ) throws -> (certificate: Certificate, key: P256.Signing.PrivateKey) {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            OrganizationName("Islet")
            CommonName("Islet development CA")
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(key)
        )
        try write(key.pemRepresentation + "\n", to: files.authorityKey, mode: 0o600)
        try write(try certificate.serializeAsPEM().pemString + "\n", to: files.authority, mode: 0o644)
        return (certificate, key)
    }

    private static func issueServerCertificate(
        _ files: DevelopmentFiles, names: [GeneralName], authority: (certificate: Certificate, key: P256.Signing.PrivateKey),
        now: Date
    ) throws {
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(825 * 86_400),
            issuer: authority.certificate.subject,
            subject: try DistinguishedName {
                OrganizationName("Islet")
                CommonName("Islet APNs-compatible endpoint")
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: .init(authority.key)
        )
        let authorityPEM = try authority.certificate.serializeAsPEM().pemString
        try write(serverKey.pemRepresentation + "\n", to: files.privateKey, mode: 0o600)
        try write(try server.serializeAsPEM().pemString + "\n" + authorityPEM + "\n", to: files.certificate, mode: 0o644)
    }

    private static func write(_ text: String, to path: String, mode: Int) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]) else {
            throw IsletError(.internalError, "Cannot write \(path).")
        }
    }

    /// The bytes of an IPv4 or IPv6 address, if `text` is one.
    private static func IPAddressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
