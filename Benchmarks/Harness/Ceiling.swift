import ArgumentParser
import Foundation
import Hummingbird

/// `islet-bench ceiling`: Hummingbird with an empty handler — the most any Hummingbird server
/// can answer on this machine, Islet's HTTP ceiling — and a bare event stream: the least a
/// Hummingbird connection holding a streamed response open can cost (its memory floor).
struct Ceiling: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve Hummingbird's empty handler (the HTTP ceiling).")

    @Option(help: "The port (0: a free one).")
    var port = 0

    func run() async throws {
        let router = Router()
        router.post("/v1/activities/:id/update") { _, _ in HTTPResponse.Status.ok }
        // A stream that says it is connected, then holds the response open until the client
        // leaves — what any server must do for a subscriber, and nothing more.
        router.get("/v1/events") { request, _ in
            Response(status: .ok, headers: [.contentType: "text/event-stream"], body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: ": connected\n\n"))
                try? await request.body.consumeWithCancellationOnInboundClose { _ in
                    try await Task.sleep(for: .seconds(86_400))
                }
                try await writer.finish(nil)
            })
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                FileHandle.standardOutput.write(Data("ceiling listening on http://127.0.0.1:\(channel.localAddress?.port ?? 0)\n".utf8))
            }
        )
        try await app.runService()
    }
}
