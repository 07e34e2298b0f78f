import Foundation
import IsletCore
import IsletPostgres
import IsletTestSupport
import Testing

/// The PostgreSQL store's first pieces (docs/cluster.md), against a real server the test starts.
@Suite("PostgreSQL store")
struct PostgresStoreTests {
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)"))
    func aNodeReachesItsDatabase() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let version = try await PostgresProbe.version(of: try PostgresAddress(server.url))
        #expect(version.hasPrefix("PostgreSQL "), "\(version)")
    }

    @Test func anAddressIsReadWhereItEnters() throws {
        let address = try PostgresAddress("postgres://islet:secret@db.internal:6543/live")
        #expect(address.host == "db.internal" && address.port == 6543 && address.username == "islet")
        #expect(address.password == "secret" && address.database == "live")
        #expect(address.redacted == "postgres://islet@db.internal:6543/live")
        #expect(try PostgresAddress("postgresql://u@h/d").port == 5432)
        for bad in ["mysql://u@h/d", "postgres://h/d", "postgres://u@/d", "postgres://u@h", "postgres://u@h/", "postgres://u@h:0/d", "postgres://u@h/d?sslmode=require", "nonsense"] {
            #expect(throws: IsletError.self, "\(bad)") { try PostgresAddress(bad) }
        }
    }
}
