import Foundation
import IsletTestSupport

/// A peer, started, with nothing to create up front: its keys or topics come into being with
/// their first update.
struct PeerTarget<P: PeerProtocol>: Target {
    let server: ServerUnderTest
    let fleet: Fleet

    var label: String { P.label }
    var subscription: String { P.subscription }

    static func start(_ systems: Systems, fleet: Fleet) async throws -> PeerTarget {
        PeerTarget(server: try await P.launch(systems), fleet: fleet)
    }

    func publisher() async throws -> any Publisher {
        PeerPublisher<P>(connection: try await .open(port: server.port), fleet: fleet)
    }

    func subscribe(device: Int) async throws -> Subscription {
        let connection = try await PeerConnection<P>.open(port: server.port)
        try await P.subscribe(device: device, on: connection)
        return connection.subscription
    }
}

/// One connection updating a peer, one update in flight.
struct PeerPublisher<P: PeerProtocol>: Publisher {
    let connection: PeerConnection<P>
    let fleet: Fleet

    func update(_ activity: Int, state: String) async throws -> Bool {
        let (request, replies) = P.update(activity, device: fleet.device(of: activity), state: state, on: connection)
        return P.accepted(try await connection.request(request, replies: replies))
    }

    func close() async { await connection.close() }
}

extension Systems {
    /// A peer on a free loopback port (the harness picks it), with a fresh scratch directory.
    /// - Parameter arguments: The command line, given the directory and the port.
    func startPeer(_ name: String, executable: String, arguments: (URL, Int) throws -> [String]) async throws -> ServerUnderTest {
        let directory = try scratch(name)
        let port = try freeLoopbackPort()
        return try await ServerUnderTest(
            name: name, executable: executable, arguments: try arguments(directory, port), directory: directory, port: port
        )
    }
}
