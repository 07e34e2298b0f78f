import Foundation
import IsletCore
import IsletEngine
@testable import IsletPostgres
import IsletTestSupport
import Testing

/// The store on a PostgreSQL that takes TLS connections only, as managed databases do (docs/cluster.md).
///
/// The server's certificate is signed by an authority of the test's own and names `localhost`
/// alone, so a connection to 127.0.0.1 tells `verify-ca` (any name) from `verify-full`.
@Suite("PostgreSQL over TLS", .enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)"), .hangDetector)
struct PostgresTLSTests {
    /// One server for the suite, stopped and deleted when the test process ends, however it
    /// ends (as `PostgresServer.shared` is).
    static let server = Result { try PostgresServer(tlsNames: ["localhost"]) }

    /// A new database on the TLS server, reached at `host`, with `parameters`; `CA` in them
    /// stands for the path of the authority that signed the server's certificate.
    static func database(host: String, _ parameters: String...) async throws -> String {
        let server = try server.get()
        let name = PostgresServer.databaseName(of: try await server.newDatabase())
        let authority = try #require(server.authority)
        let query = (parameters + ["connect_timeout=60"]).filter { !$0.isEmpty }.map { $0.replacingOccurrences(of: "=CA", with: "=\(authority)") }
        return "postgres://\(server.user)@\(host):\(server.port)/\(name)?" + query.joined(separator: "&")
    }

    /// Opens a store on `address`, which must fail; what it failed with.
    static func refusal(_ address: String) async -> IsletError? {
        await #expect(throws: IsletError.self, "\(address)") {
            _ = try await PostgresStore.open(StoreOptions(location: address))
        }
    }

    /// The server takes no plain connection, so every connection that works below is TLS.
    @Test(.hangDetector)
    func aPlainConnectionIsRefusedWithPostgreSQLsReason() async throws {
        let error = await Self.refusal(try await Self.database(host: "127.0.0.1", "sslmode=disable"))
        #expect(error?.reason == .unavailable)
        #expect(error?.message.contains("no encryption") == true, "\(String(describing: error))")
    }

    /// Each mode that asks for TLS reaches the server and the store works: a change (its events
    /// read back through the tail, which LISTENs on a pooled connection) and a read. Every
    /// session the node opened is encrypted and carries the address's `application_name`.
    @Test(.hangDetector, arguments: [
        ("127.0.0.1", ""),
        ("127.0.0.1", "sslmode=require"),
        ("127.0.0.1", "sslmode=require&sslrootcert=CA"),
        ("127.0.0.1", "sslmode=verify-ca&sslrootcert=CA"),
        ("localhost", "sslmode=verify-full&sslrootcert=CA"),
    ])
    func aStoreWritesAndReadsOverTLS(host: String, parameters: String) async throws {
        let name = "tls-\(UUID().uuidString.prefix(8).lowercased())"
        let address = try await Self.database(host: host, parameters, "application_name=\(name)", "pool_size=4")
        try await EngineFixture.with(.postgres, database: address) { fixture in
            let activity = try await fixture.start(ride(20))
            #expect(try await fixture.engine.activity(activity.id, owner: nil).id == activity.id)
            #expect(fixture.recorded.events.contains { $0.activityId == activity.id }, "the tail read the change's events")
            #expect(fixture.store.location == (try PostgresAddress(address)).redacted)
            let sessions = try Self.server.get().rows(
                "SELECT ssl FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE application_name = '\(name)'", in: "postgres"
            )
            #expect(!sessions.isEmpty && sessions.allSatisfy { $0 == "t" }, "\(sessions)")
        }
    }

    /// `verify-full` checks that the certificate names the host: it names localhost, not 127.0.0.1.
    @Test(.hangDetector)
    func verifyFullRefusesACertificateThatDoesNotNameTheHost() async throws {
        let error = await Self.refusal(try await Self.database(host: "127.0.0.1", "sslmode=verify-full", "sslrootcert=CA"))
        #expect(error?.reason == .unavailable)
        #expect(error?.message.contains("does not name 127.0.0.1") == true, "\(String(describing: error))")
    }

    /// A certificate another authority signed is refused by every mode given that authority —
    /// `require` too, as libpq's `require` checks the chain when it has an sslrootcert.
    @Test(.hangDetector, arguments: ["sslmode=verify-full", "sslmode=verify-ca", "sslmode=require"])
    func aCertificateFromAnotherAuthorityIsRefused(mode: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-other-ca-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let other = try TestAuthority(in: directory, name: "Another CA")
        let error = await Self.refusal(try await Self.database(host: "localhost", mode, "sslrootcert=\(other.certificate)"))
        #expect(error?.reason == .unavailable)
        #expect(error?.message.contains("not signed by an authority in sslrootcert") == true, "\(String(describing: error))")
    }

    /// `require` refuses a server without TLS (the shared server, which has none), where the
    /// default `prefer` connects without it.
    @Test(.hangDetector)
    func requireRefusesAServerWithoutTLS() async throws {
        let plain = try await PostgresServer.newDatabase()
        let error = await Self.refusal(plain + "&sslmode=require")
        #expect(error?.reason == .unavailable)
        #expect(error?.message.contains("does not offer TLS") == true, "\(String(describing: error))")
        #expect(try await PostgresProbe.version(of: PostgresAddress(plain + "&sslmode=prefer")).hasPrefix("PostgreSQL "))
    }
}
