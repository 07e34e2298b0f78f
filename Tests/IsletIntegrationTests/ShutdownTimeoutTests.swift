import Foundation
import IsletTestSupport
import Testing

extension DurabilityTests {
    /// A client that pipelines requests and never reads keeps an answer in flight for ever;
    /// graceful shutdown used to wait for it, so SIGTERM never stopped the server.
    @Test func sigtermStopsTheServerDespiteAClientThatNeverReads() async throws {
        let data = DataDirectory()
        // The write timeout is far off: the shutdown timeout is what must end this connection.
        let server = try await ServerProcess(
            data: data, environment: ["ISLET_SERVER_SHUTDOWN_TIMEOUT": "1s", "ISLET_SERVER_WRITE_TIMEOUT": "1h"]
        )
        let stalled = try RawSocket(port: server.port, receiveBuffer: 1024)
        stalled.send(Array(String(repeating: "GET /openapi.json HTTP/1.1\r\nHost: islet\r\n\r\n", count: 100).utf8))
        // The first answer has started: the connection is in flight, not idle.
        #expect(await offThePool { stalled.read(atMost: 15, seconds: 5).text } == "HTTP/1.1 200 OK")

        let started = ContinuousClock.now
        let status = await server.stop(signal: SIGTERM)
        #expect(status == 0)
        #expect(ContinuousClock.now - started < .seconds(6))
        #expect(server.output.contains("closed 1 connection still open after the shutdown timeout"))
        withExtendedLifetime(stalled) {}
    }
}
