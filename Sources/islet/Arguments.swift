import ArgumentParser
import Foundation
import IsletCore

/// Reads a JSON argument: inline JSON, `@path` for a file, or `-` for standard input.
func parseJSON(_ text: String, option: String) throws -> JSONValue {
    let data: Data
    if text == "-" {
        data = FileHandle.standardInput.readDataToEndOfFile()
    } else if text.hasPrefix("@") {
        let path = String(text.dropFirst())
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(option): cannot read \(path).")
        }
        data = contents
    } else {
        data = Data(text.utf8)
    }
    // The strict reading the server gives a body (a field twice, a number out of range), which
    // says where the text went wrong.
    do throws(JSONSyntax.Failure) {
        return try JSONSyntax.parse(data)
    } catch {
        let source = text == "-" ? " (standard input)" : text.hasPrefix("@") ? " (\(text.dropFirst()))" : ""
        throw ValidationError("\(option) is not JSON\(source): \(error)\(pointer(at: error, in: data))")
    }
}

/// The line of `data` a JSON failure is on, with a caret under the place: for the short texts
/// typed on a command line; nothing for a long line.
private func pointer(at failure: JSONSyntax.Failure, in data: Data) -> String {
    let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    guard failure.line >= 1, failure.line <= lines.count else { return "" }
    let line = lines[failure.line - 1]
    let text = String(decoding: line, as: UTF8.self)
    guard text.count <= 100 else { return "" }
    let before = String(decoding: line.prefix(max(0, failure.column - 1)), as: UTF8.self).count
    return "\n  \(text)\n  \(String(repeating: " ", count: before))^"
}

/// Reads a duration such as `5m`, `1h30m` or `90` (seconds).
func parseDuration(_ text: String, option: String) throws -> TimeInterval {
    guard let seconds = DurationText.seconds(text) else {
        throw ValidationError("\(option) must be a duration like 90s, 5m or 1h30m.")
    }
    return seconds
}

/// The content options `start`, `update`, `end` and `by-key` share. A content is whole, as
/// ActivityKit's `ActivityContent` is: what is not given (a stale date, a relevance) is not kept
/// from the previous one.
struct ContentOptions: ParsableArguments {
    @Option(help: "The content state as JSON (inline, @file or -).")
    var state: String?

    @Option(help: "Mark the content stale after this long (e.g. 5m); none when left out.")
    var staleIn: String?

    @Option(help: "Mark the content stale at this Unix time.")
    var staleDate: Double?

    @Option(help: "The relevance score: the highest leads the Dynamic Island. 0 when left out: a new content replaces the whole previous one, as ActivityKit's does.")
    var relevance: Double?

    /// The content, or `nil` when no state was given.
    func content() throws -> ActivityContent? {
        guard let state else {
            if staleIn != nil || staleDate != nil || relevance != nil {
                throw ValidationError("--stale-in, --stale-date and --relevance need --state.")
            }
            return nil
        }
        var staleAt = staleDate.map(Date.init(timeIntervalSince1970:))
        if let staleIn {
            staleAt = Date().addingTimeInterval(try parseDuration(staleIn, option: "--stale-in"))
        }
        return ActivityContent(state: try parseJSON(state, option: "--state"), staleDate: staleAt, relevanceScore: relevance ?? 0)
    }
}

/// The alert options of `start` and `update`.
struct AlertOptions: ParsableArguments {
    @Option(help: "An alert's title (shown with the update).")
    var alertTitle: String?

    @Option(help: "An alert's body.")
    var alertBody: String?

    @Option(help: "The alert's sound: default or a sound file's name.")
    var sound: String?

    func alert() throws -> Alert? {
        guard alertTitle != nil || alertBody != nil else {
            if sound != nil { throw ValidationError("--sound needs --alert-title or --alert-body.") }
            return nil
        }
        return Alert(title: alertTitle ?? "", body: alertBody ?? "", sound: sound)
    }
}

/// Reads a dismissal policy: `default`, `immediate`, a duration from now (`30m`), or `at:<unix>`.
func parseDismissal(_ text: String) throws -> DismissalPolicy {
    switch text {
    case "default": return .default
    case "immediate": return .immediate
    default:
        if text.hasPrefix("at:"), let seconds = Double(text.dropFirst(3)) {
            return .after(Date(timeIntervalSince1970: seconds))
        }
        guard let seconds = DurationText.seconds(text) else {
            throw ValidationError("--dismiss must be default, immediate, a duration (30m) or at:<Unix time>.")
        }
        return DismissalPolicy.fromDismissTimeInterval(seconds, now: Date())
    }
}
