@testable import IsletEngine
import IsletTestSupport
import Testing

/// The gate the delivery sender waits at until the server answers on its API port.
@Suite("Gate", .hangDetector)
struct GateTests {
    @Test func waitersGoOnlyOnceTheGateOpens() async {
        let gate = Gate(open: false)
        let passed = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    await gate.wait()
                    return !Task.isCancelled
                }
            }
            // Every waiter is parked at the gate: none went through.
            while gate.waiting < 3 { await Task.yield() }
            gate.open()
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(passed == 3)
        #expect(gate.waiting == 0)
        await gate.wait()  // open for good: no wait
    }

    @Test func aCancelledWaiterGoesWithoutTheGateOpening() async {
        let gate = Gate(open: false)
        let waiter = Task {
            await gate.wait()
            return Task.isCancelled
        }
        while gate.waiting < 1 { await Task.yield() }
        waiter.cancel()
        #expect(await waiter.value)
        #expect(gate.waiting == 0)
    }
}
