import Hummingbird
import NIOCore

/// The context of a request on the APNs-compatible endpoint.
struct APNsRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request came on (its HTTP/2 stream's parent), for what Apple keeps
    /// per connection.
    let connection: (any Channel)?

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        connection = source.channel.parent ?? source.channel
    }
}
