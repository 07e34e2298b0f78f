import Foundation

/// Where the server whose admin key is kept in a data directory listens: `<data>/address`, one
/// line (`http://127.0.0.1:8080`), written each time its REST port answers.
///
/// The CLI finds the admin key beside it and may send it only to that server: a key goes to
/// the server it belongs to, never to whatever `ISLET_URL` happens to name (a capture server, a
/// cluster with a key of its own).
public enum AdminKeyAddress {
    /// The record's file in a data directory.
    public static func path(in dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent("address")
    }

    /// The address recorded in a data directory, if a server wrote one.
    public static func recorded(in dataDirectory: String) -> String? {
        (try? String(contentsOfFile: path(in: dataDirectory), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines).nilIfEmpty
    }

    /// Records where the server listens.
    static func record(_ address: String, in dataDirectory: String) throws {
        try (address + "\n").write(toFile: path(in: dataDirectory), atomically: true, encoding: .utf8)
    }

    /// Whether a client's `server` URL reaches the server that recorded `recorded`: the same
    /// scheme and port, and the same host — where a loopback name (`127.0.0.1`, `localhost`,
    /// `[::1]`) stands for any other, and a server listening on every address (`0.0.0.0`,
    /// `[::]`) is reached by a loopback name only, the one name sure to be this machine.
    public static func matches(_ server: String, recorded: String) -> Bool {
        guard let target = Endpoint(server), let origin = Endpoint(recorded),
            target.scheme == origin.scheme, target.port == origin.port
        else { return false }
        if target.host == origin.host { return true }
        let loopback = KeylessAccess.Authority.isLoopbackName
        return loopback(target.host) && (loopback(origin.host) || ["0.0.0.0", "::", "[::]"].contains(origin.host))
    }

    /// A URL's scheme, host and port (the scheme's default when it names none), lower-cased.
    private struct Endpoint {
        var scheme: String
        var host: String
        var port: Int

        init?(_ text: String) {
            guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
                let host = components.host?.lowercased(), !host.isEmpty
            else { return nil }
            self.scheme = scheme
            // Foundation gives an IPv6 host without its brackets.
            self.host = host.contains(":") ? "[\(host)]" : host
            guard let port = components.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil) else { return nil }
            self.port = port
        }
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
