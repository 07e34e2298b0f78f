import Crypto
import Foundation
import IsletAPNs
import IsletTestSupport
import Testing

/// A provider signs one token and reuses it: Apple refuses a connection whose token changes
/// more than once in 20 minutes (`TooManyProviderTokenUpdates`).
@Suite("Provider tokens, reused", .hangDetector)
struct ReusedProviderTokenTests {
    func reused() async throws -> ReusedProviderToken {
        ReusedProviderToken(try await ProviderTokenSigner(p8: P256.Signing.PrivateKey().pemRepresentation, keyId: "KEY1234567", teamId: "TEAM123456"))
    }

    @Test func requestsAskingAtOnceShareOneToken() async throws {
        let tokens = try await reused()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        // Each asks at a slightly different moment, as concurrent requests do.
        let signed = try await withThrowingTaskGroup(of: String.self) { group in
            for offset in 0..<64 { group.addTask { try await tokens.token(now: start.addingTimeInterval(Double(offset) / 10)) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(signed.count == 1)
        // Reused until it is 50 minutes old, then signed again.
        #expect(try await tokens.token(now: start.addingTimeInterval(49 * 60)) == signed.first)
        #expect(try await tokens.token(now: start.addingTimeInterval(50 * 60)) != signed.first)
    }

    @Test func aRefusedTokenIsReplacedOnceHoweverManyReportIt() async throws {
        let tokens = try await reused()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let refused = try await tokens.token(now: now)
        let replacements = try await withThrowingTaskGroup(of: String.self) { group in
            for offset in 0..<32 { group.addTask { try await tokens.token(now: now.addingTimeInterval(1 + Double(offset) / 10), replacing: refused) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(replacements.count == 1)
        #expect(replacements.first != refused)
        // Reporting the old one again, late, does not replace the replacement.
        #expect(try await tokens.token(now: now.addingTimeInterval(10), replacing: refused) == replacements.first)
    }

    @Test func aCallerWhoseClockIsBehindUsesTheReplacementAlreadyMade() async throws {
        // Concurrent callers' times arrive in any order: the one that replaces the refused
        // token may be later than one that reports it after. CI once saw a second replacement.
        let tokens = try await reused()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let refused = try await tokens.token(now: now)
        let replacement = try await tokens.token(now: now.addingTimeInterval(2), replacing: refused)
        #expect(replacement != refused)
        #expect(try await tokens.token(now: now.addingTimeInterval(1), replacing: refused) == replacement)
        #expect(try await tokens.token(now: now.addingTimeInterval(1)) == replacement)
    }
}
