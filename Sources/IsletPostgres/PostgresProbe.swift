import IsletEngine
import Logging
import PostgresNIO

/// Asks a PostgreSQL server what it is: the first thing a node does with its database, and
/// what `/healthz` will ask.
public enum PostgresProbe {
    /// The server's `version()`.
    ///
    /// - Throws: `invalidRequest` when `sslrootcert` cannot be read; postgres-nio's error when the
    ///   server cannot be reached or refuses the login.
    public static func version(of address: PostgresAddress, logger: Logger = Logger(label: "islet.postgres")) async throws -> String {
        let client = PostgresClient(configuration: try address.clientConfiguration(poolSize: 1, connectTimeout: .seconds(10)), backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            let rows = try await client.query("SELECT version()", logger: logger)
            for try await version in rows.decode(String.self) {
                return version
            }
            return ""
        }
    }
}
