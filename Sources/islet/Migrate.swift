import ArgumentParser
import Foundation
import IsletCore
import IsletEngine
import IsletPostgres
import IsletStore
import Logging

/// `islet migrate`: brings a database's schema up to date before nodes start on it.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Bring the store's schema up to date (every node also does so as it starts).",
        discussion: """
            For PostgreSQL, run it once before starting new nodes after an upgrade: nodes starting \
            together would otherwise each wait for the first to finish. It takes a lock, so running \
            it twice at once is safe, and each migration commits whole or not at all. For SQLite, it \
            opens the database in the data directory, which migrates it.
            """
    )

    @Option(help: "The store: postgres://user@host:port/database[?sslmode=…], or sqlite (env ISLET_STORE, ISLET_STORE_DATABASE).")
    var store: String?

    @Option(name: .customLong("data"), help: "The data directory, for SQLite (default ./.islet).")
    var dataDirectory: String?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let location = store ?? environment["ISLET_STORE"] ?? environment["ISLET_STORE_DATABASE"] ?? "sqlite"
        if location == "sqlite" {
            let directory = dataDirectory ?? environment["ISLET_STORE_DATA_DIRECTORY"] ?? ".islet"
            let path = (directory as NSString).appendingPathComponent("islet.sqlite")
            guard FileManager.default.fileExists(atPath: path) else {
                throw CommandFailure("There is no database at \(path); `islet serve` creates one.")
            }
            _ = try SQLiteStore(path: path)
            print("SQLite at \(path) is up to date.")
            return
        }
        var logger = Logger(label: "islet.migrate")
        logger.logLevel = .warning
        let address: PostgresAddress
        do {
            address = try PostgresAddress(location)
        } catch {
            throw CommandFailure(error.message)
        }
        do {
            let applied = try await PostgresMigrator.migrate(address, logger: logger)
            if applied.isEmpty {
                print("PostgreSQL at \(address.redacted) is up to date (schema version \(PostgresMigrator.latest)).")
            } else {
                print("PostgreSQL at \(address.redacted): applied \(applied.map(String.init).joined(separator: ", ")); schema version \(PostgresMigrator.latest).")
            }
        } catch let error as IsletError {
            throw CommandFailure(error.message)
        }
    }
}
