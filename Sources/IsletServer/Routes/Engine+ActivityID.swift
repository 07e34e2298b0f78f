import Hummingbird
import IsletCore
import IsletEngine

extension Engine {
    /// The activity a path's `:id` names: its whole id in any case, or the first characters of
    /// it (`ActivityReference`), among the owner's activities when an app asks. A whole id costs
    /// no lookup, so a change by id stays one write.
    ///
    /// - Parameter prefixes: Whether a prefix may name it. A display names activities by whole
    ///   id: a prefix looked up across every device could tell it other devices' ids.
    func activityID(in context: IsletRequestContext, owner: BundleID?, prefixes: Bool = true) async throws -> ActivityID {
        let text = try context.parameters.require("id")
        let reference = try ActivityReference(text)
        if !prefixes, case .prefix = reference { throw IsletError(.activityNotFound, "No activity \(text).") }
        return try await resolve(reference, owner: owner)
    }
}
