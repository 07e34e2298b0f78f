import ArgumentParser
import AsyncHTTPClient
import Foundation
import HummingbirdWSClient
import IsletClient
import IsletCore
import Logging
import NIOCore
import HTTPTypes
import NIOHTTP1
import NIOWebSocket

/// `islet webhooks`: where an app's events go (docs/webhooks.md) — endpoints added, listed,
/// removed, their secrets rotated, a test sent, events replayed, attempts read — and `listen`,
/// which brings them to a laptop without exposing a port.
struct Webhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "An app's webhook endpoints: add, list, rm, rotate, test, replay, attempts, and listen (forward them to a local URL).",
        subcommands: [
            ListWebhooks.self, AddWebhook.self, RemoveWebhook.self, RotateWebhook.self, TestWebhook.self, ReplayWebhook.self,
            WebhookAttempts.self, Listen.self,
        ],
        defaultSubcommand: ListWebhooks.self
    )

    struct ListWebhooks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List an app's webhook endpoints.")

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let webhooks = try await options.run { client in try await client.webhooks(bundleId: try await app.bundleId(client)) }
            let output = Output(json: options.json)
            if options.json { return output.encoded(["webhooks": webhooks]) }
            if webhooks.isEmpty { return Terminal.line("No webhook endpoints.") }
            output.table(
                ["ID", "URL", "EVENTS", "STATE", "AT"],
                webhooks.map { [$0.id, $0.url, $0.events.joined(separator: ","), Self.state(of: $0), $0.cursor] }
            )
        }

        /// Enabled, failing since when, or disabled and why.
        static func state(of webhook: WebhookEndpointView) -> String {
            if !webhook.enabled { return "disabled" + (webhook.disabledReason.map { ": \($0)" } ?? "") }
            guard let failing = webhook.failing else { return "enabled" }
            return "failing at \(failing.event) (\(failing.attempts) attempts)"
        }
    }

    struct AddWebhook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add an endpoint and print its signing secret, which no later command shows."
        )

        @Argument(help: "Where the events go: https://…, or http:// to this machine (127.0.0.1, localhost).")
        var url: String

        @Option(help: "Events to send, comma-separated: activity.*, delivery.failed, token.invalidated… (default: all).")
        var events: String?

        @Option(help: "What it is for, in a few words.")
        var description: String?

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let body = CreateWebhookBody(url: url, events: events.map(Webhooks.names), description: description)
            let webhook = try await options.run { client in try await client.createWebhook(bundleId: try await app.bundleId(client), body) }
            if options.json { return Output(json: true).encoded(webhook) }
            Terminal.line("Webhook \(webhook.id) sends \(webhook.events.joined(separator: ", ")) to \(webhook.url).")
            Terminal.line("Its signing secret (shown once; verify each request with it): \(webhook.secret ?? "")")
        }
    }

    struct RemoveWebhook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove an endpoint and its attempt log.")

        @Argument(help: "The endpoint's id (wh_…).")
        var id: String

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await options.run { client in try await client.deleteWebhook(bundleId: try await app.bundleId(client), id: id) }
            Terminal.line("Removed webhook \(id).")
        }
    }

    struct RotateWebhook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Give an endpoint a new signing secret; the old one keeps signing beside it for a while (default 24h)."
        )

        @Argument(help: "The endpoint's id (wh_…).")
        var id: String

        @Option(help: "How long the old secret keeps signing: 24h, 30m, 0 for not at all.")
        var keepPrevious: String?

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let keep = try keepPrevious.map { text in
                guard let seconds = DurationText.seconds(text) else { throw ValidationError("--keep-previous: a duration like 24h, 30m or 0.") }
                return seconds
            }
            let webhook = try await options.run { client in
                try await client.rotateWebhookSecret(bundleId: try await app.bundleId(client), id: id, keepPreviousFor: keep)
            }
            if options.json { return Output(json: true).encoded(webhook) }
            Terminal.line("New signing secret for \(webhook.id): \(webhook.secret ?? "")")
            if let until = webhook.previousSecretUntil { Terminal.line("The old one signs beside it until \(Output.time(until)).") }
        }
    }

    struct TestWebhook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test", abstract: "Send an endpoint a webhook.test event now and print how it answered."
        )

        @Argument(help: "The endpoint's id (wh_…).")
        var id: String

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let attempt = try await options.run { client in try await client.testWebhook(bundleId: try await app.bundleId(client), id: id) }
            if options.json { return Output(json: true).encoded(attempt) }
            Terminal.line("\(attempt.event) → \(Webhooks.outcome(attempt))")
            if !attempt.succeeded { throw ExitCode.failure }
        }
    }

    struct ReplayWebhook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "replay", abstract: "Send an endpoint its events again from an event (evt_…) or a time."
        )

        @Argument(help: "The endpoint's id (wh_…).")
        var id: String

        @Option(help: "The first event to send again: its id (evt_123), an ISO 8601 time, or Unix seconds.")
        var since: String

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let webhook = try await options.run { client in
                try await client.replayWebhook(bundleId: try await app.bundleId(client), id: id, since: since)
            }
            if options.json { return Output(json: true).encoded(webhook) }
            Terminal.line("Webhook \(webhook.id) sends again from after \(webhook.cursor).")
        }
    }

    struct WebhookAttempts: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "attempts", abstract: "An endpoint's latest attempts, newest first (--failed: its dead letters)."
        )

        @Argument(help: "The endpoint's id (wh_…).")
        var id: String

        @Option(help: "How many (1 to 1000).")
        var limit = 20

        @Flag(help: "Only the events given up on (dead letters).")
        var failed = false

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let attempts = try await options.run { client in
                try await client.webhookAttempts(bundleId: try await app.bundleId(client), id: id, limit: limit, failedOnly: failed)
            }
            let output = Output(json: options.json)
            if options.json { return output.encoded(["attempts": attempts]) }
            if attempts.isEmpty { return Terminal.line("No attempts.") }
            output.table(
                ["AT", "EVENT", "TYPE", "ATTEMPT", "OUTCOME"],
                attempts.map { [Output.time($0.at), $0.event, $0.type.rawValue, String($0.attempt), Webhooks.outcome($0)] }
            )
        }
    }

    /// `islet webhooks listen --forward-to …`, as `stripe listen` does: a session on the server
    /// whose endpoint's events come down a WebSocket, signed as over HTTP, and are POSTed here
    /// to the forward address with the same headers; its answer goes back as the endpoint's.
    struct Listen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "listen",
            abstract: "Receive an app's webhooks here and POST each, signed, to a local URL — no port exposed — until Ctrl-C.",
            discussion: """
                The server makes an endpoint for the session (deleted when it ends) and prints its signing secret: verify the \
                forwarded requests with it as with any endpoint's. Events come from the session's start on, in order per \
                activity, retried on the endpoint's schedule when the forward address fails.
                """
        )

        @Option(help: "Where each webhook is POSTed: http://127.0.0.1:3000/hook.")
        var forwardTo: String

        @Option(help: "Events to receive, comma-separated: activity.*, delivery.failed… (default: all).")
        var events: String?

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func validate() throws {
            guard let url = URL(string: forwardTo), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw ValidationError("--forward-to: an http:// or https:// URL, like http://127.0.0.1:3000/hook.")
            }
        }

        func run() async throws {
            let bundleId = try await options.run { client in try await app.bundleId(client) }
            var address = options.serverURL.hasPrefix("https://") ? "wss://" + options.serverURL.dropFirst(8) : "ws://" + options.serverURL.dropFirst(7)
            if address.hasSuffix("/") { address.removeLast() }
            address += "/v1/apps/\(bundleId)/webhooks/listen"
            if let events { address += "?events=" + (events.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(.init(charactersIn: ".*_-,"))) ?? events) }
            var headers = HTTPFields()
            if let key = options.resolvedKey { headers[.authorization] = "Bearer \(key)" }
            let forwarder = Forwarder(url: forwardTo, json: options.json)
            var logger = Logger(label: "islet-listen")
            logger.logLevel = .critical
            let closed: WebSocketCloseFrame?
            do {
                closed = try await WebSocketClient.connect(
                    url: address, configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers), logger: logger
                ) { inbound, outbound, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message,
                              let received = try? WireFormat.decoder().decode(WebhookListenMessage.self, from: Data(text.utf8))
                        else { continue }
                        if let answer = await forwarder.handle(received) {
                            try await outbound.write(.text(String(decoding: try WireFormat.encoder().encode(answer), as: UTF8.self)))
                        }
                    }
                }
            } catch {
                try? await forwarder.shutdown()
                Terminal.error("error: could not listen at \(address): \(error)")
                throw ExitCode.failure
            }
            try? await forwarder.shutdown()
            if let closed, case .unknown(let code) = closed.closeCode, code >= 4000 {
                Terminal.error("error: the server ended the session: \(closed.reason ?? "code \(code)")")
                throw ExitCode(code == 4401 || code == 4403 ? 3 : code == 4404 ? 4 : 1)
            }
            Terminal.line("The server ended the session\(closed?.reason.map { ": \($0)" } ?? ".")")
        }
    }

    /// Posts each webhook a session receives to the forward address, one at a time, and says
    /// how it went.
    final class Forwarder: Sendable {
        let url: String
        let json: Bool
        private let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))

        init(url: String, json: Bool) {
            self.url = url
            self.json = json
        }

        /// What to answer the server, for a request.
        func handle(_ message: WebhookListenMessage) async -> WebhookListenMessage? {
            switch message.type {
            case .ready:
                guard let webhook = message.webhook else { return nil }
                if json { Output(json: true).encoded(["listening": webhook]) } else {
                    let which = webhook.events == ["*"] ? "every event" : webhook.events.joined(separator: ", ")
                    Terminal.line("Ready: \(which) of \(webhook.bundleId) goes to \(url) (this session's endpoint: \(webhook.id); Ctrl-C ends it).")
                    Terminal.line("Signing secret for this session: \(webhook.secret ?? "")")
                }
                return nil
            case .request:
                guard let id = message.id else { return nil }
                var request = HTTPClientRequest(url: url)
                request.method = .POST
                request.headers.add(name: "User-Agent", value: "Islet-Webhooks/1 (islet webhooks listen)")
                for (name, value) in message.headers ?? [:] { request.headers.add(name: name, value: value) }
                request.body = .bytes(ByteBuffer(string: message.body ?? ""))
                let started = ContinuousClock.now
                var answer = WebhookListenMessage(type: .response, id: id)
                do {
                    let response = try await http.execute(request, timeout: .seconds(10))
                    let body = try await response.body.collect(upTo: 64 << 10)
                    answer.status = Int(response.status.code)
                    answer.body = String(decoding: body.readableBytesView.prefix(256), as: UTF8.self)
                } catch {
                    answer.error = "\(url): \(error)"
                }
                let milliseconds = Int((ContinuousClock.now - started) / .milliseconds(1))
                let type = (try? JSONSerialization.jsonObject(with: Data((message.body ?? "").utf8)) as? [String: Any])?["type"] as? String ?? "?"
                if json {
                    Output(json: true).encoded(ListenLine(id: id, type: type, status: answer.status, error: answer.error, milliseconds: milliseconds))
                } else {
                    let outcome = answer.status.map { "\($0)" } ?? "failed: \(answer.error ?? "")"
                    Terminal.line("\(Output.time(Date()))  \(type.padding(toLength: 18, withPad: " ", startingAt: 0))  \(id)  → \(outcome) (\(milliseconds) ms)")
                }
                return answer
            case .response:
                return nil
            }
        }

        func shutdown() async throws {
            try await http.shutdown()
        }
    }

    /// A forwarded webhook, as `--json` prints it.
    struct ListenLine: Encodable {
        var id: String
        var type: String
        var status: Int?
        var error: String?
        var milliseconds: Int
    }

    /// Comma-separated event names, trimmed.
    static func names(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// An attempt's outcome in words: `200 (12 ms)`, `500: failing on purpose`, `failed: …`.
    static func outcome(_ attempt: WebhookAttempt) -> String {
        let latency = attempt.latencyMs.map { " (\(Int($0)) ms)" } ?? ""
        guard let status = attempt.status else { return "failed: \(attempt.error ?? "no answer")\(latency)" }
        let response = attempt.succeeded ? "" : attempt.response.map { ": \($0.prefix(80))" } ?? ""
        return "\(status)\(response)\(latency)\(attempt.deadLetter ? ", given up" : "")"
    }
}
