import Foundation
import IsletCore
import IsletEngine
@testable import IsletPostgres
import IsletTestSupport
import Testing

/// A PostgreSQL store's address, in libpq's URI form with its common parameters (docs/cluster.md).
@Suite("PostgreSQL address", .hangDetector)
struct PostgresAddressTests {
    @Test func anAddressIsReadWhereItEnters() throws {
        let address = try PostgresAddress("postgres://islet:secret@db.internal:6543/live")
        #expect(address.host == "db.internal" && address.port == 6543 && address.username == "islet")
        #expect(address.password == "secret" && address.database == "live")
        #expect(address.redacted == "postgres://islet@db.internal:6543/live?sslmode=prefer")
        #expect(try PostgresAddress("postgresql://u@h/d").port == 5432)
        for bad in [
            "mysql://u@h/d", "postgres://h/d", "postgres://u@/d", "postgres://u@h", "postgres://u@h/", "postgres://u@h:0/d",
            "postgres://u@h:70000/d", "postgres://u@h/a/b", "nonsense",
        ] {
            #expect(throws: IsletError.self, "\(bad)") { try PostgresAddress(bad) }
        }
    }

    /// One sslmode case: the query, and what it must come to.
    struct ModeCase: Sendable, CustomTestStringConvertible {
        let query: String
        let mode: PostgresAddress.SSLMode
        let tls: PostgresAddress.TLS
        var testDescription: String { query.isEmpty ? "(none)" : query }

        init(_ query: String, _ mode: PostgresAddress.SSLMode, _ tls: PostgresAddress.TLS) {
            (self.query, self.mode, self.tls) = (query, mode, tls)
        }
    }

    /// Each sslmode means what it means to libpq, as far as postgres-nio can: `allow` is
    /// `prefer` (TLS first), and an `sslrootcert` makes every TLS mode check the chain.
    @Test(arguments: [
        ModeCase("", .prefer, .preferred(.none)),
        ModeCase("sslmode=disable", .disable, .off),
        ModeCase("sslmode=allow", .allow, .preferred(.none)),
        ModeCase("sslmode=prefer", .prefer, .preferred(.none)),
        ModeCase("sslmode=require", .require, .required(.none)),
        ModeCase("sslmode=prefer&sslrootcert=/etc/islet/ca.pem", .prefer, .preferred(.chain)),
        ModeCase("sslmode=require&sslrootcert=/etc/islet/ca.pem", .require, .required(.chain)),
        ModeCase("sslmode=verify-ca&sslrootcert=/etc/islet/ca.pem", .verifyCA, .required(.chain)),
        ModeCase("sslmode=verify-full&sslrootcert=/etc/islet/ca.pem", .verifyFull, .required(.chainAndHost)),
        ModeCase("sslrootcert=system", .verifyFull, .required(.chainAndHost)),
        ModeCase("sslmode=verify-full&sslrootcert=system", .verifyFull, .required(.chainAndHost)),
    ])
    func everySSLModeMeansWhatLibpqMeans(_ expected: ModeCase) throws {
        let address = try PostgresAddress("postgres://u@db.example.com/d" + (expected.query.isEmpty ? "" : "?\(expected.query)"))
        #expect(address.sslMode == expected.mode)
        #expect(address.tls == expected.tls)
        #expect(address.redacted.contains("sslmode=\(expected.mode.rawValue)"))
    }

    /// A combination that would check less than it seems to is refused, not quietly weakened.
    @Test(arguments: [
        ("sslmode=verify-ca", "sslrootcert"), ("sslmode=verify-full", "sslrootcert"),
        ("sslmode=disable&sslrootcert=/etc/islet/ca.pem", "sslmode=disable"),
        ("sslmode=require&sslrootcert=system", "verify-full"), ("sslmode=verify-ca&sslrootcert=system", "verify-full"),
        ("sslmode=REQUIRE", "disable, allow, prefer, require, verify-ca, verify-full"), ("sslmode=", "sslmode"),
        ("sslrootcert=", "sslrootcert"),
    ])
    func aWeakOrUnknownTLSSettingIsRefused(query: String, named: String) {
        let error = #expect(throws: IsletError.self, "\(query)") { try PostgresAddress("postgres://u@h/d?\(query)") }
        #expect(error?.reason == .invalidRequest)
        #expect(error?.message.contains(named) == true, "\(String(describing: error))")
    }

    /// libpq URIs percent-encode what a URI reserves: the password `p@ss:w/d x` is written
    /// `p%40ss%3Aw%2Fd%20x`.
    @Test func aPercentEncodedUserAndPasswordAreDecoded() throws {
        let address = try PostgresAddress("postgres://app%40tenant:p%40ss%3Aw%2Fd%20x@db.example.com/my%2Fdb")
        #expect(address.username == "app@tenant")
        #expect(address.password == "p@ss:w/d x")
        #expect(address.database == "my/db")
        #expect(address.redacted == "postgres://app%40tenant@db.example.com:5432/my%2Fdb?sslmode=prefer")
    }

    /// A typo must not silently disable TLS: the parameter is named, with the ones taken.
    @Test func anUnknownParameterIsRefusedByName() {
        let typo = #expect(throws: IsletError.self) { try PostgresAddress("postgres://u@h/d?sslmod=require") }
        #expect(typo?.reason == .invalidRequest)
        #expect(typo?.message.contains("\"sslmod\"") == true, "\(String(describing: typo))")
        #expect(typo?.message.contains(PostgresAddress.parameters.joined(separator: ", ")) == true, "\(String(describing: typo))")
        let clientCertificate = #expect(throws: IsletError.self) { try PostgresAddress("postgres://u@h/d?sslcert=/c.pem") }
        #expect(clientCertificate?.message.contains("Client certificates") == true)
        let twice = #expect(throws: IsletError.self) { try PostgresAddress("postgres://u@h/d?sslmode=require&sslmode=disable") }
        #expect(twice?.message.contains("sslmode twice") == true)
    }

    /// connect_timeout is libpq's whole seconds, but never "wait for ever" (0).
    @Test func connectTimeoutIsWholeSecondsWithinBounds() throws {
        #expect(try PostgresAddress("postgres://u@h/d?connect_timeout=7").connectTimeout == .seconds(7))
        #expect(try PostgresAddress("postgres://u@h/d").connectTimeout == nil)
        for bad in ["0", "-1", "301", "1.5", "ten", ""] {
            let error = #expect(throws: IsletError.self, "\(bad)") { try PostgresAddress("postgres://u@h/d?connect_timeout=\(bad)") }
            #expect(error?.message.contains("connect_timeout is 1 to 300") == true, "\(String(describing: error))")
        }
    }

    @Test func poolSizeAndApplicationNameAreChecked() throws {
        let address = try PostgresAddress("postgres://u@h/d?pool_size=4&application_name=node%20a")
        #expect(address.poolSize == 4 && address.applicationName == "node a")
        #expect(try PostgresAddress("postgres://u@h/d").applicationName == "islet")
        for bad in ["pool_size=1", "pool_size=1001", "pool_size=x", "application_name=", "application_name=\(String(repeating: "a", count: 64))", "application_name=caf%C3%A9"] {
            #expect(throws: IsletError.self, "\(bad)") { try PostgresAddress("postgres://u@h/d?\(bad)") }
        }
    }

    /// libpq lets the host come as a parameter; one host, over TCP.
    @Test func theHostMayComeAsAParameter() throws {
        #expect(try PostgresAddress("postgres://u@/d?host=db.internal").host == "db.internal")
        let v6 = try PostgresAddress("postgres://u@[::1]:6543/d")
        #expect(v6.host == "::1" && v6.redacted.hasPrefix("postgres://u@[::1]:6543/d?"))
        for bad in ["postgres://u@h/d?host=other", "postgres://u@/d?host=/var/run/postgresql", "postgres://u@/d?host=a,,b"] {
            #expect(throws: IsletError.self, "\(bad)") { try PostgresAddress(bad) }
        }
    }

    /// libpq's multi-host address, in both of its forms, with `target_session_attrs`
    /// (docs/cluster.md §7): as many ports as hosts, one for all, or none.
    @Test func severalHostsAreReadAsLibpqReadsThem() throws {
        let uri = try PostgresAddress("postgres://islet:pw@db-a:5432,db-b:5433/islet?target_session_attrs=read-write")
        #expect(uri.endpoints == [.init(host: "db-a", port: 5432), .init(host: "db-b", port: 5433)])
        #expect(uri.targetSessionAttributes == .readWrite && uri.host == "db-a" && uri.password == "pw")
        #expect(uri.redacted == "postgres://islet@db-a:5432,db-b:5433/islet?sslmode=prefer&target_session_attrs=read-write")
        #expect(try PostgresAddress(uri.redacted) == { var copy = uri; copy.password = nil; return copy }())
        #expect(try PostgresAddress("postgres://u@a,b:6000,[::1]/d").endpoints == [
            .init(host: "a", port: 5432), .init(host: "b", port: 6000), .init(host: "::1", port: 5432),
        ])
        #expect(try PostgresAddress("postgres://u@/d?host=a,b&port=6000").endpoints == [.init(host: "a", port: 6000), .init(host: "b", port: 6000)])

        let keywords = try PostgresAddress("host=db-a,db-b port=5432,5433 dbname=islet user=islet password='p w\\'s' target_session_attrs=primary")
        #expect(keywords.endpoints == uri.endpoints && keywords.database == "islet" && keywords.username == "islet")
        #expect(keywords.password == "p w's" && keywords.targetSessionAttributes == .primary)
        #expect(try PostgresAddress("host=a,b port=6543 dbname=d user=u sslmode=disable").endpoints.map(\.port) == [6543, 6543])
        #expect(try PostgresAddress("postgres://u@h/d").targetSessionAttributes == .any)
        #expect(try PostgresAddress("postgres://u@a,b/d?target_session_attrs=prefer-standby").targetSessionAttributes == .preferStandby)

        for (bad, named) in [
            ("postgres://u@a,b/d?target_session_attrs=standby", "a node writes"), ("postgres://u@a/d?target_session_attrs=read-only", "a node writes"),
            ("postgres://u@a/d?target_session_attrs=primary-ish", "read-write"), ("host=a,b,c port=1,2 dbname=d user=u", "one port for each host"),
            ("host=a port=99999 dbname=d user=u", "1–65535"), ("host=a dbname=d user=u sslcert=c.pem", "keyword Islet does not take"),
            ("host=a dbname=d user=u password='open", "quote"), ("host=a dbname=d user=u dbname=e", "twice"),
            ("postgres://u@a,b/d?host=c", "twice"), ("postgres://u@a:x/d", "1–65535"), ("host=a user=u", "no database"),
            ("postgres://u@" + (0...16).map { "h\($0)" }.joined(separator: ",") + "/d", "at most 16"), ("postgres://u@[::1/d", "["),
        ] {
            let error = #expect(throws: IsletError.self, "\(bad)") { try PostgresAddress(bad) }
            #expect(error?.message.contains(named) == true, "\(bad): \(String(describing: error))")
        }
    }

    /// What logs and `/healthz` show: every parameter but never the password — nor does any
    /// refusal repeat it.
    @Test func theRedactedFormKeepsTheParametersButNotThePassword() throws {
        let address = try PostgresAddress(
            "postgres://islet:secret@db.internal:6543/live?sslmode=verify-full&sslrootcert=/etc/islet/ca.pem&application_name=node-a&connect_timeout=7&pool_size=4"
        )
        #expect(
            address.redacted
                == "postgres://islet@db.internal:6543/live?sslmode=verify-full&sslrootcert=/etc/islet/ca.pem&application_name=node-a&connect_timeout=7&pool_size=4"
        )
        #expect(try PostgresAddress(address.redacted) == { var copy = address; copy.password = nil; return copy }())
        for bad in ["mysql://u:secret@h/d", "postgres://u:secret@h/d?sslmod=x", "postgres://u:secret@h", "postgres://u:secret@h/d?sslmode=verify-full"] {
            let error = #expect(throws: IsletError.self) { try PostgresAddress(bad) }
            #expect(error?.message.contains("secret") == false, "\(String(describing: error))")
        }
    }

    /// Every parameter the address takes is in the sample configuration and docs/cluster.md.
    @Test func everyParameterIsDocumented() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
        let sample = try String(contentsOf: root.appendingPathComponent("islet.sample.yaml"), encoding: .utf8)
        let cluster = try String(contentsOf: root.appendingPathComponent("docs/cluster.md"), encoding: .utf8)
        for parameter in PostgresAddress.parameters {
            #expect(sample.contains("#   \(parameter)="), "\(parameter) is missing from islet.sample.yaml")
            #expect(cluster.contains("`\(parameter)`"), "\(parameter) is missing from docs/cluster.md")
        }
        for mode in PostgresAddress.SSLMode.allCases {
            #expect(cluster.contains("`\(mode.rawValue)`"), "sslmode \(mode.rawValue) is missing from docs/cluster.md")
        }
    }

    /// The pool's size and the connect timeout come from the address, the store's own numbers
    /// otherwise; every session names itself.
    @Test func theClientIsConfiguredFromTheAddress() throws {
        let given = try PostgresAddress("postgres://u@h/d?pool_size=4&connect_timeout=7&application_name=node-a")
            .clientConfiguration(poolSize: 12, connectTimeout: .seconds(5))
        #expect(given.options.maximumConnections == 4 && given.options.connectTimeout == .seconds(7))
        #expect(given.options.additionalStartupParameters.contains { $0 == ("application_name", "node-a") })
        let defaults = try PostgresAddress("postgres://u@h/d").clientConfiguration(poolSize: 12, connectTimeout: .seconds(5))
        #expect(defaults.options.maximumConnections == 12 && defaults.options.connectTimeout == .seconds(5))
        #expect(defaults.options.additionalStartupParameters.contains { $0 == ("application_name", "islet") })
    }

    /// An sslrootcert that is missing or holds no certificate stops the store as it opens,
    /// with its reason — before any connection is tried (nothing listens on port 1).
    @Test func anUnusableRootCertificateStopsTheStoreAtStart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-rootcert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let notPEM = directory.appendingPathComponent("ca.pem")
        try Data("not a certificate\n".utf8).write(to: notPEM)
        for (path, says) in [(directory.appendingPathComponent("missing.pem").path, "is not a file"), (notPEM.path, "holds no PEM certificate")] {
            let error = await #expect(throws: IsletError.self) {
                _ = try await PostgresStore.open(StoreOptions(location: "postgres://u@127.0.0.1:1/d?sslmode=verify-full&sslrootcert=\(path)"))
            }
            #expect(error?.reason == .invalidRequest, "\(String(describing: error))")
            #expect(error?.message.contains(says) == true && error?.message.contains(path) == true, "\(String(describing: error))")
        }
    }
}
