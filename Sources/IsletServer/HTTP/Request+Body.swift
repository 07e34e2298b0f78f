import Hummingbird
import IsletCore
import NIOCore
import NIOHTTP1

extension Request {
    /// The whole body, at most `limit` bytes. A body that cannot be read is the client's doing,
    /// and the error says so: over the limit, `payloadTooLarge`; framing HTTP/1.1 cannot parse
    /// (a chunk size such as `zz`, `-5` or one beyond 64 bits), or a body that stopped arriving
    /// in time, `invalidRequest`.
    ///
    /// - Parameters:
    ///   - limit: The largest body accepted.
    ///   - tooLarge: The message of the `payloadTooLarge` refusal.
    func collectBody(upTo limit: Int, tooLarge: @autoclosure () -> String) async throws -> ByteBuffer {
        do {
            return try await body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw IsletError(.payloadTooLarge, tooLarge())
        } catch let error as HTTPParserError {
            throw IsletError(.invalidRequest, "The request body is not valid HTTP/1.1 (\(error)).")
        } catch let error as RequestBodyTimeout {
            throw IsletError(.invalidRequest, error.description)
        }
    }
}
