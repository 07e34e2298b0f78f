import ArgumentParser
import AsyncHTTPClient
import Foundation
import IsletClient
import IsletCore
import IsletExamples
import IsletKit

/// `islet demo <name>`: plays one of the reference documents' scenarios against a server.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play a scenario against the server, live on its display: \(Demos.all.map(\.name).joined(separator: ", ")).",
        discussion: """
            \(Demos.all.map { "\($0.name): \($0.summary)" }.joined(separator: "\n"))

            Each demo is an app written with IsletKit (Examples/Scenarios), its layout in the layout \
            DSL. With the admin key (on the server's machine, no ISLET_KEY) it plays in an app of its \
            own, com.example.demo.<name>, which it creates if needed and whose layout it registers, so \
            it never touches your apps. An explicit key wins: with an app's key (ISLET_KEY, --key, or \
            a remote server) it plays in that app, and says so, with a type of its own \
            (IsletDemo…, IsletCIBuildAttributes for ci): it registers that type's layout only where \
            there is none, and stops (exit 5) rather than replace one it did not make. Open the display \
            (`islet serve` prints its address) to watch. Ctrl-C ends the activity at once and stops.
            """
    )

    @Argument(help: "The scenario: \(Demos.all.map(\.name).joined(separator: ", ")).")
    var name: String

    @Option(help: "How many times faster than real time: 1 plays the water countdown's five minutes in five minutes. Figures in the content (a ride's time) are the demo's time; timers on the display count real time.")
    var speed: Double = 1

    @Flag(help: "ci: the build fails at its tests.")
    var fail = false

    @Flag(help: "Print the demo's layout document (JSON) and stop: what Examples/CI/layout.json holds for ci.")
    var printLayout = false

    @Option(help: "The device to show it on.")
    var device = DeviceID.defaultDevice

    @Option(help: "delivery: the APNs endpoint (env ISLET_APNS_URL; default https://127.0.0.1:2197).")
    var apns: String?

    @Option(help: "delivery: a CA certificate to trust (PEM); default: Islet's development CA in --data, if there.")
    var ca: String?

    @OptionGroup var options: ClientOptions

    func validate() throws {
        guard Demos.named(name) != nil else {
            throw ValidationError("No demo named \(name): try \(Demos.all.map(\.name).joined(separator: ", ")).")
        }
        guard speed > 0, speed.isFinite else { throw ValidationError("--speed must be a positive number.") }
        if fail, name != "ci" { throw ValidationError("--fail is for the ci demo.") }
    }

    func run() async throws {
        let options = self.options
        let demo: any Demo = name == "ci" ? CIBuild(fails: fail) : Demos.named(name)!
        if printLayout {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(try demo.layout()), as: UTF8.self))
            return
        }
        let report = Report()
        let http = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: Push.clientConfiguration(trusting: Push.authority(ca: ca, dataDirectory: options.dataDirectory))
        )
        let result: Result<Void, any Error>
        do {
            result = .success(try await options.run { client in
                let app = try await Self.app(for: demo, client: client)
                if app.adminActsAs == nil {
                    report.note("note: the key is \(app.bundleId)'s, so the demo plays in that app, with a type of its own (\(demo.attributesType)); the admin key gives it an app of its own")
                }
                IsletConnection.configure(server: options.serverURL, key: options.resolvedKey, device: device, app: app.adminActsAs)
                try await Self.registerLayout(of: demo, in: app, client: client)
                report.note("\(demo.name): \(app.bundleId) on device \(device); watch it at \(client.displayURL(device: device))")
                let context = DemoContext(
                    bundleId: app.bundleId, speed: speed, client: client,
                    apns: APNsClient(server: apns ?? options.environment["ISLET_APNS_URL"] ?? "https://127.0.0.1:2197", http: http),
                    progress: report.progress, note: report.note
                )
                do {
                    try await Self.untilInterrupted { try await demo.run(in: context) }
                } catch ActivityAuthorizationError.denied {
                    Terminal.error("""
                        error: Live Activities are off for \(app.bundleId) on device \(device): turn them on in the display's \
                        panel, or: islet devices settings \(device) --app \(app.bundleId) --activities on
                        """)
                    throw ExitCode(5)
                }
            })
        } catch {
            result = .failure(error)
        }
        try? await http.shutdown()
        try result.get()
    }

    /// The app the demo plays: its own, created if needed, with the admin key; the key's app otherwise.
    static func app(for demo: any Demo, client: IsletClient) async throws -> (bundleId: String, adminActsAs: String?) {
        do {
            _ = try await client.createApp(bundleId: demo.bundleId, name: "Islet demo: \(demo.name)")
            return (demo.bundleId, demo.bundleId)
        } catch ClientError.refused(409, _) {
            return (demo.bundleId, demo.bundleId)
        } catch ClientError.refused(403, _) {
            guard let own = try await client.apps().first?.bundleId else { throw ExitCode(3) }
            return (own, nil)
        }
    }

    /// Registers the demo's layout for its type: in the demo's own app, always; in the app of the
    /// key given, only where the type has none. A layout already there that is not this one is
    /// someone's (or an older Islet's demo), and the demo stops rather than replace it.
    static func registerLayout(of demo: any Demo, in app: (bundleId: String, adminActsAs: String?), client: IsletClient) async throws {
        let layout = try demo.layout()
        if app.adminActsAs == nil {
            do {
                let registered = try await client.layout(bundleId: app.bundleId, attributesType: demo.attributesType)
                // Compared as the server writes them: the same document is the same bytes.
                if try WireFormat.string(registered.layout) == WireFormat.string(layout) { return }
                Terminal.error("""
                    error: \(app.bundleId) has a layout for \(demo.attributesType) that is not the \(demo.name) demo's, and the demo \
                    does not replace it. Play it with the admin key (in an app of its own), or remove that layout first: \
                    curl -X DELETE \(client.server)/v1/apps/\(app.bundleId)/layouts/\(demo.attributesType) -H "Authorization: Bearer $ISLET_KEY"
                    """)
                throw ExitCode(5)
            } catch ClientError.refused(404, _) {
                // None yet: the demo's to register.
            }
        }
        _ = try await client.putLayout(bundleId: app.bundleId, attributesType: demo.attributesType, layout)
    }

    /// Runs `body`, cancelling it on Ctrl-C or SIGTERM (the demo ends its activity, then stops).
    static func untilInterrupted(_ body: @escaping @Sendable () async throws -> Void) async throws {
        let task = Task { try await body() }
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { task.cancel() }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }
        do {
            try await task.value
        } catch is CancellationError {
            Terminal.error("\nStopped: the demo's activity was ended.")
            throw ExitCode(130)
        } catch let stopped as DemoStopped {
            Terminal.error("\nStopped: \(stopped)")
        } catch let error as DemoError {
            Terminal.error("\nerror: \(error)")
            throw ExitCode(6)
        }
    }
}

/// The demo's lines: notes stay, a progress line is redrawn in place on a terminal (and left
/// out of logs, where the notes say enough).
private final class Report: Sendable {
    private let terminal = isatty(STDOUT_FILENO) == 1
    private let start = Date()

    var note: @Sendable (String) -> Void {
        { [self] line in write((terminal ? "\r\u{1B}[2K" : "") + "[\(elapsed)] \(Terminal.field(line))\n") }
    }

    var progress: @Sendable (String) -> Void {
        { [self] line in if terminal { write("\r\u{1B}[2K[\(elapsed)] \(Terminal.field(line))") } }
    }

    private var elapsed: String {
        let seconds = Int(Date().timeIntervalSince(start))
        return String(format: "%02d:%02d", seconds / 60, seconds % 60)
    }

    /// Writes the demo's own line control (a carriage return, clearing the line) around text
    /// already escaped (`Terminal.field`).
    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
