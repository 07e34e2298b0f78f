import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a child process printed and how it ended: filled by a thread that reads its pipes and
/// one that waits for its end, and watched by the waits on it.
final class Transcript: Sendable {
    enum Stream: Int { case output, errors }

    private struct State {
        var bytes: [Data] = [Data(), Data()]
        /// How it ended, as `waitid` said; `ending` once what its pipes held is read too.
        var exit: ChildProcess.Termination?
        var ending: ChildProcess.Termination?
        var watchers: [Int: AsyncStream<Void>.Continuation] = [:]
        var nextWatcher = 0
    }

    private let state = Mutex(State())

    func text(of stream: Stream) -> String {
        state.withLock { String(decoding: $0.bytes[stream.rawValue], as: UTF8.self) }
    }

    /// How the program ended, once all it printed is read.
    var ending: ChildProcess.Termination? { state.withLock { $0.ending } }

    /// Whether the program has ended, its output read or not: its pid may be another's soon.
    var hasExited: Bool { state.withLock { $0.exit != nil } }

    /// A signal each time something was printed or the program ended, and once at the start;
    /// it finishes once the program has ended.
    func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.yield()
        let id: Int? = state.withLock { state in
            guard state.ending == nil else { return nil }
            defer { state.nextWatcher += 1 }
            state.watchers[state.nextWatcher] = continuation
            return state.nextWatcher
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Notes how the program ended, which `record` publishes once it has read its pipes.
    func exited(_ termination: ChildProcess.Termination) {
        state.withLock { $0.exit = termination }
    }

    /// Reads `pipes` (standard output, then standard error if apart) until `endedFd` is written
    /// to, once the program has ended; then takes what the pipes hold and publishes the ending,
    /// without waiting for the pipes to close (what else holds them may never close them).
    func record(_ pipes: [Int32], until endedFd: Int32) {
        var open = pipes.enumerated().map { (fd: $0.element, stream: Stream(rawValue: $0.offset)!) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            var polled = (open.map(\.fd) + [endedFd]).map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&polled, nfds_t(polled.count), -1) >= 0 || errno == EINTR else { break }
            if polled.last!.revents != 0 { break }
            // Reads each pipe that has something, and drops those at their end.
            open = zip(open, polled).filter { pipe, polled in
                polled.revents == 0 || readSome(pipe.fd, into: pipe.stream, buffer: &buffer)
            }.map(\.0)
        }
        for pipe in open {
            while isReadable(pipe.fd), readSome(pipe.fd, into: pipe.stream, buffer: &buffer) {}
        }
        publishEnding()
    }

    /// Reads what `fd` holds into `stream`; false at its end.
    private func readSome(_ fd: Int32, into stream: Stream, buffer: inout [UInt8]) -> Bool {
        var count: Int
        repeat {
            count = read(fd, &buffer, buffer.count)
        } while count < 0 && errno == EINTR
        guard count > 0 else { return false }
        let chunk = Data(buffer[..<count])
        let watchers = state.withLock { state in
            state.bytes[stream.rawValue].append(chunk)
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.yield() }
        return true
    }

    /// Whether `fd` has something to read now (data, or its end).
    private func isReadable(_ fd: Int32) -> Bool {
        var polled = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&polled, 1, 0) > 0
    }

    /// Makes the ending seen, and tells every wait, which then stops watching.
    private func publishEnding() {
        let watchers = state.withLock { state in
            state.ending = state.exit
            defer { state.watchers = [:] }
            return Array(state.watchers.values)
        }
        for watcher in watchers {
            watcher.yield()
            watcher.finish()
        }
    }
}
