import Foundation
import IsletCore

extension FuzzTarget {
    /// A layout document, as `PUT /v1/apps/{bundleId}/layouts/{type}` reads it: strict JSON
    /// (`WireFormat.decodeRequestValue`) or a refusal with a reason; then `Layout.parse` accepts
    /// it or refuses it with `invalidLayout` and a path, never a trap. An accepted layout keeps
    /// to the view limit and is accepted again when read back from the store, kept as JSON.
    public static let layout = FuzzTarget(name: "layout") { data throws(FuzzFailure) in
        let decoded = data.withUnsafeBytes { bytes in
            Result { () throws(IsletError) in try WireFormat.decodeRequestValue(from: bytes) }
        }
        let document: JSONValue
        switch decoded {
        case .success(let value):
            document = value
        case .failure(let error):
            try expect([.invalidRequest, .malformedJSON].contains(error.reason), "a layout body refused with \(error)")
            return
        }
        guard try parsedLayout(document) != nil else { return }
        guard let stored = try? WireFormat.encoder().encode(document) else {
            throw FuzzFailure("an accepted layout does not encode for the store")
        }
        guard let reread = try? WireFormat.decoder().decode(JSONValue.self, from: stored) else {
            throw FuzzFailure("an accepted layout, as stored, is not JSON: \(String(decoding: stored, as: UTF8.self))")
        }
        try expect(try parsedLayout(reread) != nil, "a layout accepted once is refused when read back from the store")
    }
}

/// `document` parsed as a layout, or `nil` when it is refused as the rules say: with
/// `invalidLayout` and a message that names the place.
func parsedLayout(_ document: JSONValue) throws(FuzzFailure) -> Layout? {
    let layout: Layout
    do throws(IsletError) {
        layout = try Layout.parse(document)
    } catch {
        try expect(error.reason == .invalidLayout, "a layout refused with \(error.reason.rawValue), not invalidLayout: \(error.message)")
        try expect(!error.message.isEmpty, "a layout refused with no message")
        return nil
    }
    let views = layout.regions.reduce(0) { $0 + $1.view.treeSize }
    try expect(views <= Layout.maximumViews, "accepted a layout of \(views) views; the limit is \(Layout.maximumViews)")
    return layout
}

extension LayoutView {
    /// The number of views in this tree.
    var treeSize: Int {
        children.reduce(1) { $0 + $1.view.treeSize }
    }
}
