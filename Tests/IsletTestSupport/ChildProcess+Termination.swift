import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension ChildProcess {
    /// How a program ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        /// It exited, with this status.
        case exited(Int32)
        /// A signal killed it, this one.
        case signal(Int32)

        /// Waits until the program `pid` has ended, and says how. `waitid` leaves it to be
        /// collected later (`ChildProcess.deinit`): until then its pid is not given to another.
        init(waitingFor pid: pid_t) {
            var info = siginfo_t()
            var result: Int32
            repeat {
                result = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)
            } while result < 0 && errno == EINTR
            guard result == 0 else {
                self = .signal(SIGKILL)
                return
            }
            #if canImport(Glibc)
                let status = info._sifields._sigchld.si_status
            #else
                let status = info.si_status
            #endif
            self = info.si_code == CLD_EXITED ? .exited(status) : .signal(status)
        }

        /// The exit status, or the signal's number.
        public var status: Int32 {
            switch self {
            case .exited(let status), .signal(let status): status
            }
        }

        public var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signal(let signal): "was killed by signal \(signal) (\(String(cString: strsignal(signal))))"
            }
        }
    }

    /// What a wait throws when the program ended before what it waited for showed.
    public struct Ended: Error, CustomStringConvertible {
        public let name: String
        public let awaited: String
        public let termination: Termination
        /// All it printed, of which the description shows the end.
        public let output: String

        public var description: String {
            "\(name) \(termination) before it printed \(awaited); it printed last:\n\(lastLines(of: output))"
        }
    }

    /// What a wait throws when time ran out, the program still running.
    public struct NotShown: Error, CustomStringConvertible {
        public let name: String
        public let awaited: String
        public let seconds: Double
        /// All it printed, of which the description shows the end.
        public let output: String

        public var description: String {
            "\(name) did not print \(awaited) within \(seconds) s; it printed last:\n\(lastLines(of: output))"
        }
    }
}

/// The end of a program's output: enough for its last log lines and a crash report with the
/// crashed thread (`ChildProcess.backtraceSettings`).
private func lastLines(of output: String, count: Int = 80) -> String {
    output.split(separator: "\n", omittingEmptySubsequences: false).suffix(count).joined(separator: "\n")
}
