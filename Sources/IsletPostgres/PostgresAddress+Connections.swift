import Foundation
import IsletCore
import IsletEngine
import Logging
import PostgresNIO

/// Every connection Islet opens to PostgreSQL is configured here, from the address: the store's
/// pool (and the LISTEN connection `EventTail` leases from it), the migrator's connection and
/// the probe's. One place, so TLS, the connect timeout and the session's name are the same on
/// all of them, and a test that proves one proves them all.
extension PostgresAddress {
    /// postgres-nio's pool configuration for this address.
    ///
    /// - Parameters:
    ///   - poolSize: The most connections the pool opens, when the address gives no `pool_size`.
    ///   - connectTimeout: How long opening a connection may take, when the address gives no
    ///     `connect_timeout`.
    /// - Throws: `invalidRequest` when `sslrootcert` cannot be read: before any connection is tried.
    func clientConfiguration(poolSize: Int, connectTimeout: Duration) throws(IsletError) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            switch try tlsConfiguration() {
            case nil: .disable
            case let (configuration, required: true)?: .require(configuration)
            case let (configuration, required: false)?: .prefer(configuration)
            }
        var configuration = PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.additionalStartupParameters = startupParameters
        configuration.options.connectTimeout = self.connectTimeout ?? connectTimeout
        configuration.options.maximumConnections = self.poolSize ?? poolSize
        return configuration
    }

    /// Opens one connection of its own, outside any pool (the migrator's, whose transaction
    /// holds a lock; a test's): a pool retries a failed connection quietly, and the one asking
    /// for it would wait, where this fails at once with PostgreSQL's or the TLS library's reason.
    ///
    /// - Parameter connectTimeout: How long opening it may take, when the address gives no
    ///   `connect_timeout`.
    /// - Throws: `invalidRequest` when `sslrootcert` cannot be read; postgres-nio's error when
    ///   the server cannot be reached or refuses the connection.
    func connect(connectTimeout: Duration, logger: Logger) async throws -> PostgresConnection {
        let tls: PostgresConnection.Configuration.TLS =
            switch try tlsConfiguration() {
            case nil: .disable
            case let (configuration, required: true)?: .require(try NIOSSLContext(configuration: configuration))
            case let (configuration, required: false)?: .prefer(try NIOSSLContext(configuration: configuration))
            }
        var configuration = PostgresConnection.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.additionalStartupParameters = startupParameters
        configuration.options.connectTimeout = TimeAmount(self.connectTimeout ?? connectTimeout)
        return try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
    }

    /// Why a connection to this address failed, when TLS is why, in the address's own terms
    /// (`sslmode`, `sslrootcert`, the host): postgres-nio says no more than "handshakeFailed".
    func tlsRefusal(_ error: any Error) -> String? {
        guard let error = error as? PSQLError else { return nil }
        if error.code == .sslUnsupported {
            return "the server does not offer TLS, and sslmode=\(sslMode.rawValue) requires it"
        }
        switch error.underlying {
        case let failure as NIOSSLExtraError where failure == .failedToValidateHostname:
            return "the server's certificate does not name \(host) (sslmode=verify-full checks the name, verify-ca does not)"
        case let failure as NIOSSLError:
            guard case .handshakeFailed(let reason) = failure, "\(reason)".contains("CERTIFICATE_VERIFY_FAILED") else {
                return "TLS failed: \(failure)"
            }
            let authorities =
                switch rootCertificates {
                case .file(let path): "in sslrootcert (\(path))"
                case .system: "this machine trusts (sslrootcert=system)"
                case nil: "given"
                }
            return "the server's certificate is not signed by an authority \(authorities), or has expired"
        default:
            return nil
        }
    }

    /// What every session tells the server as it starts.
    private var startupParameters: [(String, String)] {
        [("application_name", applicationName)]
    }

    /// NIOSSL's settings for `tls` — nil for no TLS — and whether a server without TLS is refused.
    private func tlsConfiguration() throws(IsletError) -> (TLSConfiguration, required: Bool)? {
        let verification: Verification
        let required: Bool
        switch tls {
        case .off: return nil
        case .preferred(let checked): (verification, required) = (checked, false)
        case .required(let checked): (verification, required) = (checked, true)
        }
        var configuration = TLSConfiguration.makeClientConfiguration()
        // PostgreSQL's own minimum since version 14 (ssl_min_protocol_version).
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification =
            switch verification {
            case .none: .none
            case .chain: .noHostnameVerification
            case .chainAndHost: .fullVerification
            }
        if case .file(let path) = rootCertificates {
            configuration.trustRoots = .certificates(try Self.authorities(in: path))
        }
        return (configuration, required)
    }

    /// The certificates in the PEM file `sslrootcert` names.
    ///
    /// - Throws: `invalidRequest` saying whether the file is missing, unreadable or holds no
    ///   certificate: a node with a wrong path stops at start, and never connects unchecked.
    private static func authorities(in path: String) throws(IsletError) -> [NIOSSLCertificate] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw IsletError(.invalidRequest, "The PostgreSQL address's sslrootcert \(path) is not a file: give the path of your provider's CA bundle (PEM).")
        }
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw IsletError(.invalidRequest, "The PostgreSQL address's sslrootcert \(path) cannot be read by this user.")
        }
        let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(bytes))
        guard let certificates, !certificates.isEmpty else {
            throw IsletError(
                .invalidRequest,
                "The PostgreSQL address's sslrootcert \(path) holds no PEM certificate (-----BEGIN CERTIFICATE-----): give your provider's CA bundle."
            )
        }
        return certificates
    }
}
