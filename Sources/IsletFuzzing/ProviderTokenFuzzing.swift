import Crypto
import Foundation
import IsletAPNs
import IsletCore
import Synchronization

extension FuzzTarget {
    /// Any `authorization` header against `ProviderTokenVerifier`, with a key registered under
    /// `ProviderTokens.keyId` for two teams' apps (the fuzz key, and another key with the same
    /// id). Every refusal is a 403 `APNsError`, never another error; an accepted token speaks
    /// for one registered team and its app only, issued within the hour; and a token checked again
    /// (from the verifier's cache) gets the same answer.
    public static let providerToken = FuzzTarget(name: "provider-token") { data throws(FuzzFailure) in
        let header = String(decoding: data, as: UTF8.self)
        let (first, again) = blocking {
            let verifier = ProviderTokenVerifier()
            return (await ProviderTokens.verify(header, with: verifier), await ProviderTokens.verify(header, with: verifier))
        }
        try expect(first == again, "the same token got \(first), then \(again) from the cache")
        switch first {
        case .success(let identity):
            // HTTP trims a field value's surrounding whitespace; the verifier may too.
            let scheme = header.drop(while: { $0 == " " }).prefix(7).lowercased()
            try expect(scheme == "bearer ", "accepted \"\(header)\", which is not bearer <JWT>")
            // Each key speaks for its own team's app, never for the other's.
            try expect(
                identity.keyId == ProviderTokens.keyId
                    && ProviderTokens.registered.contains { $0.teamId == identity.teamId && identity.bundleIds == [$0.bundleId] },
                "accepted a token for \(identity)"
            )
            let age = ProviderTokens.now.timeIntervalSince(identity.issuedAt)
            try expect(age <= ProviderTokenVerifier.maxAge && age >= -ProviderTokenVerifier.maxClockSkew, "accepted a token \(age) s old")
        case .failure(let error):
            try expect(error.statusCode == 403 && !error.reason.isEmpty, "refused with \(error)")
        case .otherError(let description):
            throw FuzzFailure("refused with an error that is not APNs's: \(description)")
        }
    }
}

/// The keys the `provider-token` target registers, and tokens made with them (docs/fuzzing.md
/// says how to make new seeds: `ProviderTokens.token(issuedAt:)`).
public enum ProviderTokens {
    public static let keyId = "FUZZKEY001"
    public static let teamId = "FUZZTEAM01"
    public static let bundleId = "com.example.fuzz"
    /// The verifier's clock: seeds are issued near it, so they stay valid.
    public static let now = Date(timeIntervalSince1970: 1_750_000_000)

    /// A fixed test key, made from constant bytes: it signs nothing outside the fuzz targets.
    public static let privateKey = try! P256.Signing.PrivateKey(rawRepresentation: Data(repeating: 0x2A, count: 32))
    /// Another key, registered under the same key id by another team.
    static let otherKey = try! P256.Signing.PrivateKey(rawRepresentation: Data(repeating: 0x17, count: 32))

    static let registered: [ProviderKey] = [
        ProviderKey(keyId: keyId, teamId: teamId, bundleId: bundleId, publicKey: privateKey.publicKey.pemRepresentation, createdAt: now),
        ProviderKey(
            keyId: keyId, teamId: "OTHERTEAM1", bundleId: "com.example.other", publicKey: otherKey.publicKey.pemRepresentation,
            createdAt: now
        ),
    ]

    /// A provider token signed with the fuzz key, as a provider makes one.
    public static func token(issuedAt: Date) async throws -> String {
        let signer = try await ProviderTokenSigner(p8: privateKey.pemRepresentation, keyId: keyId, teamId: teamId)
        return try await signer.token(issuedAt: issuedAt)
    }

    enum Outcome: Equatable, Sendable {
        case success(ProviderIdentity)
        case failure(APNsError)
        case otherError(String)
    }

    static func verify(_ header: String, with verifier: ProviderTokenVerifier) async -> Outcome {
        do {
            return .success(try await verifier.verify(authorization: header, now: now) { kid in
                registered.filter { $0.keyId == kid }
            })
        } catch let error as APNsError {
            return .failure(error)
        } catch {
            return .otherError("\(type(of: error)): \(error)")
        }
    }
}

/// Runs async work to its end from synchronous code (libFuzzer's callback), on the
/// cooperative pool, blocking this thread until it is done.
func blocking<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<T?>(nil)
    Task {
        let value = await operation()
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return result.withLock { $0! }
}
