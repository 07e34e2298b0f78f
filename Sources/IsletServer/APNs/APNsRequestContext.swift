import Hummingbird
import NIOCore

/// The context of a request on the APNs-compatible endpoint.
struct APNsRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request came on (its HTTP/2 stream's parent), for what Apple keeps
    /// per connection.
    let connection: (any Channel)?
    /// What the routes learn of the request for its line in the log.
    let trace = APNsRequestTrace()

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        connection = source.channel.parent ?? source.channel
    }
}
