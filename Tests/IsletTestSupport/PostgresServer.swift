import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL server of a test's own: `initdb` in a temporary directory, `pg_ctl start` on a
/// free loopback port, `stop()` stops it and deletes the directory. Debian's `postgresql`
/// package provides the programs (`.ci/run` installs it).
///
/// PostgreSQL refuses to run as root; as root (CI's containers), its programs run as the
/// `postgres` user the package creates, and the directory is given to that user.
///
/// Given names for a certificate, it is a server as managed PostgreSQL is: TLS only.
public final class PostgresServer: Sendable {
    /// The loopback port it listens on.
    public let port: Int
    /// The user `initdb` made, trusted without a password on loopback.
    public let user = "islet"
    /// The authority that signed the server's certificate (a PEM file), when it takes TLS.
    public let authority: String?
    private let directory: URL
    private let programs: URL
    private let runAs: String?

    /// Whether tests that need PostgreSQL run: when it is installed, or when
    /// `ISLET_REQUIRE_POSTGRES` is set (`.ci/run` sets it), which makes its absence a failure
    /// rather than a skip.
    public static var available: Bool {
        (try? programs()) != nil || ProcessInfo.processInfo.environment["ISLET_REQUIRE_POSTGRES"] != nil
    }

    /// One server for the whole test run, started when a test first needs it and stopped once
    /// the process has ended (`watch`); tests take a database of their own on it.
    public static let shared = Result { try PostgresServer() }

    /// A new, empty database on the shared server; returns its address.
    public static func newDatabase(connectTimeout: Int? = 60) async throws -> String {
        try await shared.get().newDatabase(connectTimeout: connectTimeout)
    }

    /// A new, empty database on this server; returns its address.
    ///
    /// - Parameter connectTimeout: Its `connect_timeout`, in seconds: a loaded machine's PostgreSQL
    ///   may take seconds to give a connection, and it bounds a change's wait for one too. `nil`
    ///   for the store's own default (5 s), which a test of an outage keeps: what it checks is
    ///   how soon a change is refused while the database is gone.
    public func newDatabase(connectTimeout: Int? = 60) async throws -> String {
        let name = "test_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
        try await execute("CREATE DATABASE \(name)")
        return "postgres://\(user)@127.0.0.1:\(port)/\(name)" + (connectTimeout.map { "?connect_timeout=\($0)" } ?? "")
    }

    /// The address a store is given: `postgres://islet@127.0.0.1:<port>/postgres`.
    public var url: String { "postgres://\(user)@127.0.0.1:\(port)/postgres" }

    /// Makes a database cluster and starts it.
    ///
    /// - Parameter tlsNames: When given, the server takes TLS connections only (`ssl = on`, and
    ///   `hostssl` lines alone in `pg_hba.conf`), with a certificate for these names (host names
    ///   and IP addresses) that an authority of its own signed (`authority`).
    /// - Throws: `PostgresServerError` saying what is missing or what the server said.
    public init(tlsNames: [String]? = nil) throws {
        programs = try Self.programs()
        runAs = geteuid() == 0 ? "postgres" : nil
        // In /tmp, not `TMPDIR`: the `postgres` user must reach it (a root's TMPDIR may be in
        // /root, which it cannot enter), and its socket's path must stay under 108 bytes.
        directory = URL(fileURLWithPath: "/tmp/islet-postgres-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if let runAs { try Self.run("/usr/bin/chown", [runAs, directory.path]) }
        try Self.run(programs.appendingPathComponent("initdb").path, [
            "-D", directory.appendingPathComponent("data").path, "-A", "trust", "-U", "islet", "-E", "UTF8", "--no-sync",
        ], as: runAs)
        if let tlsNames {
            do {
                authority = try Self.takeOnlyTLS(directory: directory, names: tlsNames, owner: runAs)
            } catch {
                try? FileManager.default.removeItem(at: directory)
                throw error
            }
        } else {
            authority = nil
        }
        port = try Self.startOnAFreePort(programs: programs, directory: directory, as: runAs)
        try watch()
    }

    /// Starts the server in `directory` on a free loopback port and returns the port. A free port
    /// can be taken between choosing it and the server binding it: a few tries. Removes the
    /// directory when none succeeds.
    private static func startOnAFreePort(programs: URL, directory: URL, as runAs: String?) throws -> Int {
        var failure: (any Error)?
        for _ in 0..<5 {
            let candidate = try freeLoopbackPort()
            do {
                try start(programs: programs, directory: directory, port: candidate, as: runAs)
                return candidate
            } catch {
                failure = error
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw failure ?? PostgresServerError("PostgreSQL did not start")
    }

    /// A server of its own, started off Swift's cooperative pool: `initdb`, `pg_ctl` and the
    /// wait for it block a thread (`offThePool`).
    public static func start() async throws -> PostgresServer {
        try await offThePool { Result { try PostgresServer() } }.get()
    }

    /// A streaming standby of `primary`, made off Swift's cooperative pool: `pg_basebackup` and
    /// the wait for it to stream block a thread, and what it waits for (a `DelayedLink`'s relay,
    /// a server in the test process) may need the pool's threads.
    public static func standby(
        of primary: PostgresServer, named name: String = "standby1", synchronous: Bool, replicatingThrough link: Int? = nil
    ) async throws -> PostgresServer {
        try await offThePool { Result { try PostgresServer(standbyOf: primary, named: name, synchronous: synchronous, replicatingThrough: link) } }.get()
    }

    /// A streaming standby of `primary` (docs/cluster.md §7): `pg_basebackup -R` from it into a
    /// directory of its own, started on a free port, named `application_name` in the primary's
    /// `pg_stat_replication`; with `synchronous`, the primary names it in
    /// `synchronous_standby_names`, so a commit waits for it. Returns once it streams (and, when
    /// synchronous, is the primary's synchronous standby). With `link`, it replicates through
    /// that loopback port (a delayed link to the primary) rather than from the primary's own.
    public init(standbyOf primary: PostgresServer, named name: String = "standby1", synchronous: Bool, replicatingThrough link: Int? = nil) throws {
        programs = primary.programs
        runAs = primary.runAs
        authority = nil
        directory = URL(fileURLWithPath: "/tmp/islet-postgres-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if let runAs { try Self.run("/usr/bin/chown", [runAs, directory.path]) }
        let data = directory.appendingPathComponent("data")
        do {
            try Self.run(programs.appendingPathComponent("pg_basebackup").path, [
                "-D", data.path, "-h", "127.0.0.1", "-p", "\(primary.port)", "-U", primary.user, "-R", "-X", "stream", "-c", "fast",
            ], as: runAs)
            // The primary knows it by this name (its `pg_stat_replication`, `synchronous_standby_names`).
            let settings = try FileHandle(forWritingTo: data.appendingPathComponent("postgresql.auto.conf"))
            try settings.seekToEnd()
            try settings.write(contentsOf: Data(
                "\nprimary_conninfo = 'host=127.0.0.1 port=\(link ?? primary.port) user=\(primary.user) application_name=\(name)'\n".utf8
            ))
            try settings.close()
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        port = try Self.startOnAFreePort(programs: programs, directory: directory, as: runAs)
        try watch()
        if synchronous {
            try primary.psql("ALTER SYSTEM SET synchronous_standby_names = '\(name)'", database: "postgres")
            try primary.psql("SELECT pg_reload_conf()", database: "postgres")
        }
        // Streaming (and the primary's synchronous standby, when asked) within 30 s. Not asked,
        // the primary's own settings say which it is (`*` makes any standby synchronous).
        let wanted = synchronous ? ["streaming|sync"] : ["streaming|async", "streaming|sync", "streaming|potential", "streaming|quorum"]
        for _ in 0..<300 {
            let rows = try primary.rows("SELECT state, sync_state FROM pg_stat_replication WHERE application_name = '\(name)'", in: "postgres")
            if rows.contains(where: wanted.contains) { return }
            usleep(100_000)
        }
        throw PostgresServerError("the standby \(name) did not stream from the primary within 30 s")
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`), keeping its data.
    public func crash() {
        _ = try? Self.run(programs.appendingPathComponent("pg_ctl").path, [
            "-D", directory.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop",
        ], as: runAs)
    }

    /// Promotes a standby to a primary (`pg_ctl promote`), and returns once it takes writes.
    public func promote() throws {
        try Self.run(programs.appendingPathComponent("pg_ctl").path, ["-D", directory.appendingPathComponent("data").path, "-w", "promote"], as: runAs)
    }

    /// Configures the cluster in `directory` to take TLS connections only, with a certificate for
    /// `names`; returns the path of the authority that signed it.
    private static func takeOnlyTLS(directory: URL, names: [String], owner: String?) throws -> String {
        let authority = try TestAuthority(in: directory.appendingPathComponent("tls"))
        let issued = try authority.issue(for: names)
        let data = directory.appendingPathComponent("data")
        let settings = try FileHandle(forWritingTo: data.appendingPathComponent("postgresql.conf"))
        try settings.seekToEnd()
        try settings.write(contentsOf: Data("\nssl = on\nssl_cert_file = '\(issued.certificate)'\nssl_key_file = '\(issued.key)'\n".utf8))
        try settings.close()
        // No `host` line: a connection without TLS finds no entry and is refused.
        try Data("local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n".utf8)
            .write(to: data.appendingPathComponent("pg_hba.conf"))
        if let owner { try run("/usr/bin/chown", ["-R", owner, directory.path]) }
        return authority.certificate
    }

    /// Stops the server when this process ends, however it ends (a crash, kill -9, an exit that
    /// skips the test's own cleanup): a shell in the background waits for the process to be
    /// gone, then stops the server and deletes its directory.
    private func watch() throws {
        let stop = ((runAs.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []) + [
            programs.appendingPathComponent("pg_ctl").path, "-D", directory.appendingPathComponent("data").path, "-m", "immediate", "stop",
        ]).map(Self.quoted).joined(separator: " ")
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop); rm -rf \(Self.quoted(directory.path))"
        // In a session of its own (setsid): a signal to the test's process group must not end it.
        guard Self.shell("setsid nohup /bin/sh -c \(Self.quoted(script)) > /dev/null 2>&1 < /dev/null &") == 0 else {
            throw PostgresServerError("could not start the watcher that stops PostgreSQL after the tests")
        }
    }

    /// Runs SQL on the `postgres` database with `psql`, failing on the first error.
    public func execute(_ sql: String) async throws {
        _ = try await offThePool { [self] in Result { try psql(sql, database: "postgres") } }.get()
    }

    /// The rows a query answers on one of the shared server's databases (an address
    /// `newDatabase` gave), one line each, columns separated by `|`.
    public static func rows(_ sql: String, in database: String) async throws -> [String] {
        let server = try shared.get()
        // `psql` waits for a process: off Swift's cooperative pool, which has two threads here
        // — a test's fixtures creating their databases at once starved every other task for
        // tens of seconds.
        return try await offThePool { Result { try server.rows(sql, in: database) } }.get()
    }

    /// Runs one of PostgreSQL's client programs (`pg_dump`, `pg_restore`…) to its end, off
    /// Swift's pool; what it printed. It fails with what it said when it fails.
    @discardableResult
    public static func client(_ name: String, _ arguments: [String]) async throws -> String {
        let program = try programs().appendingPathComponent(name).path
        return try await offThePool { Result { try run(program, arguments) } }.get()
    }

    /// Runs SQL (statements, no psql commands) on one of the shared server's databases (an
    /// address `newDatabase` gave), failing on the first error.
    /// The database an address `newDatabase` gave names: its path, without the query.
    public static func databaseName(of address: String) -> String {
        String(address.split(separator: "?", maxSplits: 1)[0].split(separator: "/").last ?? "")
    }

    public static func execute(_ sql: String, in database: String) async throws {
        let server = try shared.get()
        let name = databaseName(of: database)
        _ = try await offThePool { Result { try server.psql(sql, database: name) } }.get()
    }

    /// The rows a query answers on one of this server's databases (an address `newDatabase`
    /// gave, or a database's name), one line each, columns separated by `|`.
    public func rows(_ sql: String, in database: String) throws -> [String] {
        let name = Self.databaseName(of: database)
        return try psql(sql, database: name, options: ["-t", "-A"]).split(separator: "\n").map(String.init)
    }

    /// Runs SQL on `database` with `psql`, failing on the first error; what it printed.
    @discardableResult
    private func psql(_ sql: String, database: String, options: [String] = []) throws -> String {
        try Self.run(programs.appendingPathComponent("psql").path, ["-X", "-q"] + options + [
            "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", database, "-c", sql,
        ])
    }

    /// Stops the server as an outage would (fast shutdown: open sessions are ended), keeping its data.
    public func pause() {
        _ = try? Self.run(programs.appendingPathComponent("pg_ctl").path, [
            "-D", directory.appendingPathComponent("data").path, "-m", "fast", "-w", "stop",
        ], as: runAs)
    }

    /// Starts the server again after `pause()`, on the same port.
    public func resume() throws {
        try Self.start(programs: programs, directory: directory, port: port, as: runAs)
    }

    /// Stops the server and deletes its directory.
    public func stop() {
        pause()
        try? FileManager.default.removeItem(at: directory)
    }

    /// `pg_ctl start` on the cluster in `directory`, listening on loopback at `port`.
    private static func start(programs: URL, directory: URL, port: Int, as user: String?) throws {
        try run(programs.appendingPathComponent("pg_ctl").path, [
            "-D", directory.appendingPathComponent("data").path, "-l", directory.appendingPathComponent("log").path, "-w",
            "-o", "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1 -c max_connections=400", "start",
        ], as: user)
    }

    /// The newest installed PostgreSQL's programs (`/usr/lib/postgresql/<version>/bin`).
    private static func programs() throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        guard let newest = versions.compactMap(Int.init).max() else {
            throw PostgresServerError("PostgreSQL is not installed: apt-get install postgresql (.ci/run does)")
        }
        return root.appendingPathComponent("\(newest)/bin")
    }

    /// Runs a program to its end through `/bin/sh` (`system`); what it printed, which goes to
    /// a file.
    ///
    /// Not `Foundation.Process`: after `pg_ctl start`, which leaves the server running in the
    /// background, its wait never returned (the exited child was left unreaped), and a pipe for
    /// the output would be held open by the server.
    @discardableResult
    static func run(_ program: String, _ arguments: [String], as user: String? = nil) throws -> String {
        let transcript = FileManager.default.temporaryDirectory.appendingPathComponent("islet-postgres-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: transcript) }
        let words = (user.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []) + [program] + arguments
        let command = words.map(quoted).joined(separator: " ") + " > \(quoted(transcript.path)) 2>&1 < /dev/null"
        let status = shell(command)
        guard status == 0 else {
            let said = (try? String(contentsOf: transcript, encoding: .utf8)) ?? ""
            throw PostgresServerError("\(URL(fileURLWithPath: program).lastPathComponent) failed (\(status)): \(said.suffix(2000))")
        }
        return (try? String(contentsOf: transcript, encoding: .utf8)) ?? ""
    }

    /// Runs a shell command with none of this process's descriptors but the standard three.
    ///
    /// PostgreSQL and the watcher outlive the command; what they inherit stays open as long as
    /// they run. A process that Foundation's `Process` started holds a socket whose closing
    /// tells its parent it ended: inherited by PostgreSQL, it kept `islet-bench all` waiting
    /// forever for a step that had ended.
    private static func shell(_ command: String) -> Int32 {
        let closeInherited = #"for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done 2>/dev/null; "#
        return system("/bin/bash -c \(quoted(closeInherited + command))")
    }

    /// A word for `/bin/sh`, single-quoted.
    private static func quoted(_ word: String) -> String {
        "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// Why a test's PostgreSQL could not be made or started.
public struct PostgresServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
