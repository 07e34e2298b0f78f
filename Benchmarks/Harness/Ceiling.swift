import ArgumentParser
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import NIOCore
import NIOHTTPTypes

/// `islet-bench ceiling`: Hummingbird with an empty handler — the most any Hummingbird server
/// can answer on this machine, Islet's HTTP ceiling — and bare event streams: the least a
/// Hummingbird connection holding a streamed response open can cost (its memory floor).
struct Ceiling: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve Hummingbird's empty handler (the HTTP ceiling).")

    @Option(help: "The port (0: a free one).")
    var port = 0

    @Option(help: "How /v1/events is held open: route (by the route's handler, in the connection's task), pipeline (by a channel handler, as Islet's EventStreamHandler does), or pipeline-upgradable (the same behind the WebSocket upgrade channel Islet's port uses).")
    var streams = HeldBy.route

    enum HeldBy: String, ExpressibleByArgument {
        case route, pipeline
        case pipelineUpgradable = "pipeline-upgradable"
    }

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
        let server: HTTPServerBuilder =
            switch streams {
            case .route: .http1()
            case .pipeline: .http1(configuration: .init(additionalChannelHandlers: [HeldStream()]))
            case .pipelineUpgradable:
                .http1WebSocketUpgrade(
                    configuration: .init(http1: .init(additionalChannelHandlers: [HeldStream()])),
                    shouldUpgrade: { _, _, _ in .dontUpgrade }
                )
            }
        let app = Application(
            router: router, server: server, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                FileHandle.standardOutput.write(Data("ceiling listening on http://127.0.0.1:\(channel.localAddress?.port ?? 0)\n".utf8))
            }
        )
        try await app.runService()
    }
}

/// Holds `/v1/events` open from the pipeline: the head and `: connected`, then nothing; the
/// request never reaches the connection's task.
final class HeldStream: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart
    private var holding = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data), head.path?.hasPrefix("/v1/events") == true {
            holding = true
            context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: [.contentType: "text/event-stream"]))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.body(ByteBuffer(string: ": connected\n\n"))), promise: nil)
        } else if !holding {
            context.fireChannelRead(data)
        }
    }
}
