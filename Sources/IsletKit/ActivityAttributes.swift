import Foundation

/// The static data of a Live Activity and the shape of its changing content, as in ActivityKit:
/// declare a type with the fixed fields and a nested `ContentState` with the ones that change.
///
/// ```swift
/// struct StatusAttribute: ActivityAttributes {
///     struct ContentState: Codable, Hashable {
///         var status: Status
///         var estimatedCompletionTime: Date
///     }
///     var buildId: String
/// }
/// ```
///
/// Both are sent as JSON made by a default `JSONEncoder`, exactly as iOS encodes them, so one
/// payload drives an iPhone and Islet alike.
public protocol ActivityAttributes: Decodable, Encodable, SendableMetatype {
    /// The dynamic part: what updates change.
    associatedtype ContentState: Decodable, Encodable, Hashable, SendableMetatype
}

extension ActivityAttributes {
    /// The name a server knows this type by: the Swift type's name, as iOS puts it in
    /// push-to-start payloads' `attributes-type`.
    public static var attributesTypeName: String { String(describing: Self.self) }
}
