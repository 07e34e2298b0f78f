import IsletCore
import IsletEngine
import Logging
import PostgresNIO

/// Chooses the host of a multi-host address a node works with, as libpq does with
/// `target_session_attrs` (docs/cluster.md §7): each host in turn, on a connection of its own,
/// is asked whether it is a standby and whether its sessions may write, and the first that fits
/// is kept.
enum HostSelector {
    /// The address narrowed to the host that fits; a single host with `any` as it is, unasked.
    ///
    /// - Throws: `unavailable` naming each host and why it was passed over (unreachable,
    ///   refused, a standby, read-only) when none fits; `invalidRequest` for an `sslrootcert`
    ///   that cannot be read.
    static func choose(_ address: PostgresAddress, connectTimeout: Duration, logger: Logger) async throws -> PostgresAddress {
        let wanted = address.targetSessionAttributes
        if address.endpoints.count == 1 && wanted == .any { return address }
        var passedOver: [String] = []
        var reachable: PostgresAddress?
        for endpoint in address.endpoints {
            let one = address.narrowed(to: endpoint)
            let state: (inRecovery: Bool, readOnly: Bool)
            do {
                state = try await Self.state(of: one, connectTimeout: connectTimeout, logger: logger)
            } catch let error as IsletError where error.reason == .invalidRequest {
                throw error
            } catch {
                let reason = one.tlsRefusal(error) ?? PostgresFailure.storageFailure(error) ?? PostgresFailure.serverMessage(error) ?? "\(error)"
                passedOver.append("\(endpoint): \(reason)")
                continue
            }
            if reachable == nil { reachable = one }
            let fits =
                switch wanted {
                case .any: true
                case .readWrite: !state.readOnly
                case .primary: !state.inRecovery
                case .preferStandby: state.inRecovery
                }
            if fits {
                logger.info("Chose the PostgreSQL host", metadata: ["host": "\(endpoint)", "target_session_attrs": "\(wanted.rawValue)"])
                return one
            }
            passedOver.append("\(endpoint): \(state.inRecovery ? "a standby" : "read-only")")
        }
        // libpq's prefer-standby takes any host when no standby answered.
        if wanted == .preferStandby, let reachable { return reachable }
        throw IsletError(
            .unavailable,
            "No host of the PostgreSQL address fits target_session_attrs=\(wanted.rawValue): \(passedOver.joined(separator: "; "))."
        )
    }

    /// Whether a host is a standby, and whether its sessions are read-only.
    private static func state(of address: PostgresAddress, connectTimeout: Duration, logger: Logger) async throws -> (inRecovery: Bool, readOnly: Bool) {
        let connection = try await address.connect(connectTimeout: connectTimeout, logger: logger)
        // Closed before it is let go of, on either path (postgres-nio asserts it).
        do {
            let rows = try await connection.query("SELECT pg_is_in_recovery(), current_setting('transaction_read_only')", logger: logger)
            var state = (inRecovery: false, readOnly: false)
            for try await (inRecovery, readOnly) in rows.decode((Bool, String).self) {
                state = (inRecovery, readOnly == "on")
            }
            try? await connection.close()
            return state
        } catch {
            try? await connection.close()
            throw error
        }
    }
}
