import Foundation
import IsletCore

/// Islet playing Google (docs/android.md): the service accounts it issued and the access
/// tokens it gave out, kept so they outlive a restart and serve every node.
extension Engine {
    /// Keeps a service account this server issued: its public key, to check its assertions.
    public func keepIssuedAccount(_ account: IssuedAccount) async throws {
        try await write { tx in try tx.insertIssuedAccount(account) }
    }

    /// The service accounts this server issued.
    public func issuedAccounts() async throws -> [IssuedAccount] {
        try await read { store in try store.issuedAccounts() }
    }

    /// Keeps an access token given out (as its hash).
    public func keepAccessGrant(_ grant: AccessGrant) async throws {
        try await write { tx in try tx.insertAccessGrant(grant) }
    }

    /// The access token with this hash, if this server gave it out and it has not expired.
    public func accessGrant(hash: String) async throws -> AccessGrant? {
        let now = clock.now()
        return try await read { store in try store.accessGrant(hash: hash) }.flatMap { $0.expiresAt > now ? $0 : nil }
    }
}
