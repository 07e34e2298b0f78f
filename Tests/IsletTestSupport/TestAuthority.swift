import Foundation

/// A certificate authority of a test's own, made with `openssl` — which every machine with
/// Debian's `postgresql` package has (postgresql-common needs ssl-cert, which needs openssl) — so
/// a test can give a server a certificate a client checks, and a client an authority that did
/// not sign it.
///
/// Its files are in `directory`; whoever made the directory deletes it.
public struct TestAuthority: Sendable {
    /// The authority's certificate (PEM): what a client is told to trust.
    public let certificate: String
    private let key: String
    private let directory: URL

    /// Makes an authority (an EC P-256 key, valid for two days) in `directory`, which is created
    /// when missing.
    public init(in directory: URL, name: String = "Islet test CA") throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        certificate = directory.appendingPathComponent("ca.pem").path
        key = directory.appendingPathComponent("ca-key.pem").path
        let configuration = try write(
            """
            [req]
            distinguished_name = name
            prompt = no
            x509_extensions = authority
            [name]
            CN = \(name)
            [authority]
            basicConstraints = critical, CA:true
            keyUsage = critical, keyCertSign, cRLSign
            subjectKeyIdentifier = hash
            """,
            to: "ca.cnf"
        )
        try openssl([
            "req", "-x509", "-config", configuration, "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", certificate, "-days", "2",
        ])
    }

    /// Issues a server certificate for `names` — host names, and IP addresses as the names a
    /// client checks an address against — signed by this authority.
    ///
    /// - Returns: The paths of the certificate and of its private key (PEM; the key readable by
    ///   its owner only, as PostgreSQL insists).
    public func issue(for names: [String], file: String = "server") throws -> (certificate: String, key: String) {
        let alternatives = names.map { name in
            name.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" } ? "IP:\(name)" : "DNS:\(name)"
        }
        let configuration = try write(
            """
            [req]
            distinguished_name = name
            prompt = no
            [name]
            CN = \(names.first ?? "server")
            [server]
            basicConstraints = critical, CA:false
            keyUsage = critical, digitalSignature
            extendedKeyUsage = serverAuth
            subjectAltName = \(alternatives.joined(separator: ", "))
            authorityKeyIdentifier = keyid
            """,
            to: "\(file).cnf"
        )
        let issued = (certificate: path("\(file).crt"), key: path("\(file).key"))
        let request = path("\(file).csr")
        try openssl([
            "req", "-new", "-config", configuration, "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", issued.key, "-out", request,
        ])
        try openssl([
            "x509", "-req", "-in", request, "-CA", certificate, "-CAkey", key, "-CAcreateserial", "-days", "2",
            "-extfile", configuration, "-extensions", "server", "-out", issued.certificate,
        ])
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: issued.key)
        return issued
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private func write(_ text: String, to name: String) throws -> String {
        try Data((text + "\n").utf8).write(to: URL(fileURLWithPath: path(name)))
        return path(name)
    }

    private func openssl(_ arguments: [String]) throws {
        try PostgresServer.run("/usr/bin/openssl", arguments)
    }
}
