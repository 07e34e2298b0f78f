import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An nginx of a test's own, in front of a server on this machine as a reverse proxy: Debian's
/// `nginx` package (`.ci/run` installs it), one process in the foreground (no master, no
/// daemon) on a free loopback port, its files in a temporary directory; `stop()` ends it.
public final class NginxServer: Sendable {
    /// The loopback port it listens on.
    public let port: Int
    private let process: ChildProcess
    private let directory: URL

    /// Where Debian puts nginx.
    static let program = "/usr/sbin/nginx"

    /// Whether tests that need nginx run: when it is installed, or when `ISLET_REQUIRE_NGINX` is
    /// set (`.ci/run` sets it), which makes its absence a failure rather than a skip.
    public static var available: Bool {
        FileManager.default.isExecutableFile(atPath: program) || ProcessInfo.processInfo.environment["ISLET_REQUIRE_NGINX"] != nil
    }

    /// Starts nginx with one server whose `location /` holds `directives` (a `proxy_pass` and
    /// what goes with it); returns once it accepts connections.
    public init(location directives: String) async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.program) else {
            throw NginxServerError("nginx is not installed: apt-get install nginx (.ci/run does)")
        }
        directory = URL(fileURLWithPath: "/tmp/islet-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lastError: (any Error)?
        for _ in 0..<5 {
            let candidate = try freeLoopbackPort()
            let process = try await Self.start(in: directory, port: candidate, directives: directives)
            if await Self.accepts(port: candidate, while: process) {
                (port, self.process) = (candidate, process)
                return
            }
            await process.stop(SIGKILL)
            lastError = NginxServerError(
                "nginx did not start: " + ((try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? "")
            )
        }
        try? FileManager.default.removeItem(at: directory)
        throw lastError ?? NginxServerError("nginx did not start")
    }

    deinit {
        stop()
    }

    /// Stops nginx and deletes its directory. SIGKILL: nothing of it needs keeping, and a
    /// process started from the test runner may have SIGTERM blocked, which nginx inherits.
    public func stop() {
        if process.termination == nil {
            process.kill()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    private static func start(in directory: URL, port: Int, directives: String) async throws -> ChildProcess {
        let path = directory.path
        let configuration = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(path)/nginx.pid;
            error_log \(path)/error.log;
            events { worker_connections 64; }
            http {
                access_log off;
                client_body_temp_path \(path)/body;
                proxy_temp_path \(path)/proxy;
                fastcgi_temp_path \(path)/fastcgi;
                uwsgi_temp_path \(path)/uwsgi;
                scgi_temp_path \(path)/scgi;
                server {
                    listen 127.0.0.1:\(port);
                    location / {
                        \(directives)
                    }
                }
            }
            """
        let file = directory.appendingPathComponent("nginx.conf")
        try configuration.write(to: file, atomically: true, encoding: .utf8)
        return try await ChildProcess(URL(fileURLWithPath: program), ["-p", path, "-c", file.path, "-e", "\(path)/error.log"])
    }

    /// Whether nginx accepts connections on `port` within 10 s, while it runs.
    private static func accepts(port: Int, while process: ChildProcess) async -> Bool {
        for _ in 0..<200 {
            guard process.termination == nil else { return false }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            close(fd)
            if connected { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}

/// Why a test's nginx could not be started.
public struct NginxServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
