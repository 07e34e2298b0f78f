/// A command that was given well-formed arguments and still could not do its work — an
/// unreadable key file, no browser, a configuration the server refuses. Printed as
/// `Error: <message>` with exit code 1, without the usage lines a `ValidationError` adds: they
/// would not help.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
