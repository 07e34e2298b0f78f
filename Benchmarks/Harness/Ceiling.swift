import ArgumentParser
import Foundation
import Hummingbird

/// `islet-bench ceiling`: Hummingbird with an empty handler — the most any Hummingbird server
/// can answer on this machine, Islet's HTTP ceiling.
struct Ceiling: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve Hummingbird's empty handler (the HTTP ceiling).")

    @Option(help: "The port (0: a free one).")
    var port = 0

    func run() async throws {
        let router = Router()
        router.post("/v1/activities/:id/update") { _, _ in HTTPResponse.Status.ok }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                FileHandle.standardOutput.write(Data("ceiling listening on http://127.0.0.1:\(channel.localAddress?.port ?? 0)\n".utf8))
            }
        )
        try await app.runService()
    }
}
