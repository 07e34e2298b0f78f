import ArgumentParser
import Foundation
import IsletClient
import IsletCore
import IsletRender

/// `islet render`: an activity's presentations (or a layout's, with a state from a file) as an
/// HTML page, or as a PNG through a headless Chromium.
struct Render: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw an activity's presentations to HTML, or to PNG with a headless Chromium.",
        discussion: """
            Either an activity on the server:
              islet render 4F1C2A9B --output card.png
            or a layout file with attributes and a state, without a server:
              islet render --layout bike.json --attributes '{"name": "Morning ride"}' --state @state.json
            On another surface than the iPhone (docs/surfaces.md):
              islet render 4F1C2A9B --surface watch --size 40mm -o watch.png

            A binding that finds nothing its view can draw (a field the state lacks, a string where \
            a number belongs) is drawn as it is and printed to standard error as a warning; with \
            --strict it also makes the exit code 1, for a check that sample states fit a layout.
            """
    )

    @Argument(help: "An activity's id (drawn by the server), or none with --layout.")
    var id: String?

    @Option(help: "A layout document (@file or inline JSON) to draw instead of a server's activity; {} draws the default card.")
    var layout: String?

    @Option(help: "The activity type's name, for the default card's title (with --layout).")
    var type = "Activity"

    @Option(help: "The attributes (inline JSON, @file or -), with --layout.")
    var attributes = "{}"

    @Option(help: "The content state (inline JSON, @file or -), with --layout.")
    var state = "{}"

    @Flag(help: "Draw the content as stale (with --layout).")
    var stale = false

    @Option(help: "lockScreen, compact, minimal, expanded or all.")
    var presentation = "all"

    @Option(help: "Another place than the iPhone: watch, carplay, mac, ipad or standby.")
    var surface: String?

    @Option(help: "The surface's size: watch 49mm or 40mm; carplay 240x78, 240x100 or 170x78; ipad 500 or 425.")
    var size: String?

    @Option(help: "light or dark (the watch and CarPlay are dark only).")
    var appearance = "light"

    @Option(name: .shortAndLong, help: "Where to write: a .html or .png file (default: HTML to standard output).")
    var output: String?

    @Flag(help: "Exit 1 when the drawing has warnings (after writing it).")
    var strict = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        if (id == nil) == (layout == nil) { throw ValidationError("Give an activity's id or --layout, one of them.") }
        if presentation != "all" && PresentationDocument.Kind(rawValue: presentation) == nil {
            throw ValidationError("--presentation is one of lockScreen, compact, minimal, expanded or all.")
        }
        if PresentationDocument.Appearance(rawValue: appearance) == nil {
            throw ValidationError("--appearance is light or dark.")
        }
        if let surface {
            guard let chosen = Self.surface(surface) else {
                throw ValidationError("--surface is one of \(Surface.beyondThePhone.map(\.rawValue).joined(separator: ", ")).")
            }
            if presentation != "all" { throw ValidationError("--presentation is for the iPhone; a --surface draws what that surface shows.") }
            if let size, chosen.size(named: size) == nil {
                throw ValidationError(
                    chosen.sizes.count < 2
                        ? "--size: \(chosen.rawValue) comes in one size."
                        : "--size for \(chosen.rawValue) is one of \(chosen.sizes.map(\.name).joined(separator: ", "))."
                )
            }
        } else if size != nil {
            throw ValidationError("--size goes with --surface.")
        }
    }

    /// A surface `--surface` draws: one beyond the iPhone, whose presentations `--presentation` draws.
    static func surface(_ name: String) -> Surface? { Surface.beyondThePhone.first { $0.rawValue == name } }

    func run() async throws {
        let kinds = presentation == "all" ? PresentationDocument.Kind.allCases : [PresentationDocument.Kind(rawValue: presentation)!]
        let drawn: Presentation
        let title: String
        if let id {
            drawn = try await options.run { try await $0.presentation(id) }
            title = id
        } else {
            drawn = try drawLayout()
            title = type
        }
        // Every region's warnings, whichever presentations are written: the others are drawn too.
        for warning in drawn.warnings {
            Output(json: options.json).warn("\(warning.message) (at \(warning.path))")
        }
        let appearance = PresentationDocument.Appearance(rawValue: appearance)!
        let html: String
        let room: (width: Int, height: Int)
        if let surface = surface.flatMap(Self.surface) {
            let size = surface.size(named: size)
            html = PresentationDocument.html(drawn, on: surface, size: size, appearance: appearance, title: title)
            room = PresentationDocument.pageSize(of: surface, size: size)
        } else {
            html = PresentationDocument.html(drawn, kinds: kinds, appearance: appearance, title: title)
            room = (393, kinds.map(\.height).reduce(32, +))
        }
        if let output, output.hasSuffix(".png") {
            try Screenshot.png(html: html, width: room.width, height: room.height, to: output)
        } else if let output {
            try html.write(toFile: output, atomically: true, encoding: .utf8)
        } else {
            Terminal.raw(html)
        }
        // A preview of a partial state is normal use, so warnings alone do not fail the command;
        // a check that sample states fit a layout asks for that with --strict.
        if strict && !drawn.warnings.isEmpty { throw ExitCode(1) }
    }

    private func drawLayout() throws -> Presentation {
        let attributes = try parseJSON(self.attributes, option: "--attributes")
        let state = try parseJSON(self.state, option: "--state")
        let document = try parseJSON(layout!, option: "--layout")
        let parsed: Layout
        do {
            parsed = document == .object([:])
                ? .defaultCard(attributesType: type, attributes: attributes, state: state)
                : try Layout.parse(document)
        } catch {
            throw CommandFailure("The layout is not valid: \(error.message)")
        }
        let scope = LayoutScope(attributes: attributes, state: state, isStale: stale, dateEncoding: parsed.dateEncoding)
        let renderer = Renderer { name in
            Terminal.error("note: no icon named \"\(name)\"; drawing a placeholder")
        }
        return renderer.render(parsed, scope: scope, now: Date())
    }
}

extension PresentationDocument.Kind {
    /// Room for the presentation in a screenshot, in points.
    var height: Int {
        switch self {
        case .lockScreen: 178
        case .compact, .minimal: 55
        case .expanded: 178
        }
    }
}
