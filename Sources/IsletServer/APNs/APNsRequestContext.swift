import Hummingbird
import NIOCore

/// The context of a request on the APNs-compatible endpoint.
struct APNsRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
    }
}
