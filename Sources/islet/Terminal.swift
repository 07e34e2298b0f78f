import Foundation

/// Everything the CLI writes for a person goes through here, because much of it came from an app
/// or a phone — an activity's state, an app's name, a server's message quoting a value — and a
/// terminal obeys control characters: an escape sequence in an app's title would retitle the
/// operator's window, clear the screen or hide a line. So every control character (C0 but the
/// line and tab breaks Islet writes itself, DEL, C1) and every bidirectional override is
/// written escaped, as Swift writes it (`\u{1B}`), wherever it came from. A field that stands on
/// one line (a table cell, an event's summary) is escaped whole, its line breaks too
/// (`Terminal.field`). JSON output is JSON, with the characters its encoder leaves raw escaped
/// as `\u00XX` (`Terminal.json`).
enum Terminal {
    /// Writes `text` and a line break to the standard output, unbuffered (a pipe sees each line
    /// as it is written).
    static func line(_ text: String) {
        write(escaped(text, keepingBreaks: true) + "\n", to: .standardOutput)
    }

    /// Writes `text` as it is, but escaped, to the standard output.
    static func raw(_ text: String) {
        write(escaped(text, keepingBreaks: true), to: .standardOutput)
    }

    /// Writes `text` and a line break to the standard error.
    static func error(_ text: String) {
        write(escaped(text, keepingBreaks: true) + "\n", to: .standardError)
    }

    /// A value shown on one line: every control character escaped, line breaks too.
    static func field(_ text: some StringProtocol) -> String {
        escaped(text, keepingBreaks: false)
    }

    /// JSON text with the characters JSON allows raw in strings, but a terminal obeys, escaped:
    /// DEL, C1 and the bidirectional overrides (C0 is escaped by every JSON encoder). They can
    /// only be in strings, so the text means the same.
    static func json(_ text: String) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            if isObeyed(scalar) {
                shown += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16, uppercase: true)
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    static func escaped(_ text: some StringProtocol, keepingBreaks: Bool) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            if isObeyed(scalar), !(keepingBreaks && (scalar == "\n" || scalar == "\t")) {
                shown += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    /// A character a terminal acts on rather than shows: a control (C0, DEL, C1), or a
    /// bidirectional embedding, override or isolate, which reorders what follows.
    private static func isObeyed(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || (0x202A...0x202E).contains(scalar.value)
            || (0x2066...0x2069).contains(scalar.value)
    }

    /// A reader that went away (`islet history … | head`) ends the command quietly, with the
    /// status a program stopped by SIGPIPE has (141), as other command-line programs do; a
    /// standard error that cannot be written is given up on.
    private static func write(_ text: String, to handle: FileHandle) {
        do {
            try handle.write(contentsOf: Data(text.utf8))
        } catch {
            if handle === FileHandle.standardOutput { exit(128 + SIGPIPE) }
        }
    }
}

/// `print` in this module is the terminal's: what the CLI prints is escaped (`Terminal`).
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    Terminal.raw(items.map { "\($0)" }.joined(separator: separator) + terminator)
}
