import HTTPTypes
import IsletCore
import NIOCore
import NIOHTTP1

extension IsletError {
    /// Writes the error as a whole HTTP/1.1 response that ends the connection, for channel
    /// handlers that answer before Hummingbird's router can: they sit in front of its codec and
    /// speak NIOHTTP1's parts. The body is the one `response()` sends.
    ///
    /// - Parameters:
    ///   - context: The handler's context; its channel carries an `HTTPResponseEncoder`.
    ///   - headers: Headers beyond the content type, length and `Connection: close`.
    /// - Returns: The flush of the response's last part.
    func writeClosingResponse(to context: ChannelHandlerContext, headers extra: [(String, String)] = []) -> EventLoopFuture<Void> {
        let body = ByteBuffer(string: wireBody + "\n")
        var headers = HTTPHeaders(extra)
        headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        headers.add(name: "Connection", value: "close")
        let status = HTTPResponseStatus(statusCode: Int(reason.httpStatus.code))
        context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil)
        return context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)))
    }
}
