import Crypto
import Foundation
import IsletCore
import NIOSSL
import SwiftASN1
import X509

/// The certificate the APNs-compatible endpoint presents.
///
/// With no certificate configured, Islet makes its own on first start and keeps it in
/// `<data>/tls/`: a development certificate authority (`ca.pem`, the file a provider trusts)
/// and a server certificate it signed for `localhost`, `127.0.0.1` and `::1` plus the host the
/// endpoint listens on. The files are reused on later starts, so a provider's trust survives
/// restarts.
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

    /// Loads the development certificate from `directory`, making it first if it is not there.
    ///
    /// - Parameters:
    ///   - directory: Where the files live (`<data>/tls`).
    ///   - host: The host the endpoint listens on, added to the certificate's names.
    ///   - now: The current time.
    public static func development(in directory: String, host: String, now: Date = Date()) throws -> TLSIdentity {
        let files = DevelopmentFiles(directory: directory)
        if !FileManager.default.fileExists(atPath: files.certificate) {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
            try make(files, host: host, now: now)
        }
        return TLSIdentity(
            certificateChain: try NIOSSLCertificate.fromPEMFile(files.certificate),
            privateKey: try NIOSSLPrivateKey(file: files.privateKey, format: .pem), authorityPath: files.authority
        )
    }

    struct DevelopmentFiles {
        let directory: String
        var authority: String { (directory as NSString).appendingPathComponent("ca.pem") }
        var certificate: String { (directory as NSString).appendingPathComponent("cert.pem") }
        var privateKey: String { (directory as NSString).appendingPathComponent("key.pem") }
    }

    private static func make(_ files: DevelopmentFiles, host: String, now: Date) throws {
        let authorityKey = P256.Signing.PrivateKey()
        let authorityName = try DistinguishedName {
            OrganizationName("Islet")
            CommonName("Islet development CA")
        }
        let authority = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(authorityKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
            issuer: authorityName, subject: authorityName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(authorityKey)
        )
        let serverKey = P256.Signing.PrivateKey()
        var names: [GeneralName] = [
            .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
            .ipAddress(ASN1OctetString(contentBytes: ArraySlice(repeating: 0, count: 15) + [1])),
        ]
        if let address = IPAddressBytes(host), !names.contains(.ipAddress(ASN1OctetString(contentBytes: address[...]))) {
            names.append(.ipAddress(ASN1OctetString(contentBytes: address[...])))
        } else if IPAddressBytes(host) == nil, host != "localhost", !host.isEmpty {
            names.append(.dnsName(host))
        }
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(825 * 86_400),
            issuer: authorityName,
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
            issuerPrivateKey: .init(authorityKey)
        )
        let authorityPEM = try authority.serializeAsPEM().pemString
        try write(authorityPEM + "\n", to: files.authority, mode: 0o644)
        try write(try server.serializeAsPEM().pemString + "\n" + authorityPEM + "\n", to: files.certificate, mode: 0o644)
        try write(serverKey.pemRepresentation + "\n", to: files.privateKey, mode: 0o600)
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
