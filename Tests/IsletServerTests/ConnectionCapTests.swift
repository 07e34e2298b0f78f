import NIOCore
import NIOEmbedded
import IsletTestSupport
import Testing

@testable import IsletServer

/// Counting a port's connections, refusing and dropping the ones over its cap.
@Suite("Connection cap", .hangDetector)
struct ConnectionCapTests {
    @Test func connectionsOverTheCapAreRefusedThenDroppedAndClosingFreesTheirPlace() throws {
        let cap = ConnectionCap(limit: 2, refusalSlots: 1)
        let channels = (0..<5).map { _ in EmbeddedChannel() }
        #expect(channels.map { cap.admit($0) } == [.serve, .serve, .refuse, .drop, .drop])
        _ = try? channels[0].finish()
        #expect(cap.admit(EmbeddedChannel()) == .serve)
        _ = try? channels[2].finish()
        #expect(cap.admit(EmbeddedChannel()) == .refuse)
    }

    @Test func closingAllClosesTheConnectionsStillOpen() throws {
        let cap = ConnectionCap(limit: 2, refusalSlots: 1)
        let channels = (0..<3).map { _ in EmbeddedChannel() }
        for channel in channels { _ = cap.admit(channel) }
        _ = try? channels[0].finish()
        #expect(cap.closeAll() == 2)
        for channel in channels { channel.embeddedEventLoop.run() }
        #expect(channels.allSatisfy { !$0.isActive })
        #expect(cap.closeAll() == 0)
    }

    @Test func theDefaultsLeaveDescriptorsForEverythingElse() {
        for limit in [256, 1024, 4096, 20_000, 1_048_576] {
            let budget = ConnectionBudget(descriptorLimit: limit)
            let connections = budget.http + ConnectionBudget.refusalSlots + budget.apns
            #expect(connections < limit, "\(limit): \(budget)")
            #expect(limit - connections >= min(ConnectionBudget.reserved, limit / 2), "\(limit): \(budget)")
        }
        // The figures islet.sample.yaml gives.
        #expect(ConnectionBudget(descriptorLimit: 1024).http == 640)
        #expect(ConnectionBudget(descriptorLimit: 1024).apns == 224)
        #expect(ConnectionBudget(descriptorLimit: 20_000).http > 10_000)
    }
}
