import Foundation

/// Which page of a listing a request asks for: at most `limit` items, after the place a cursor
/// names (from the start without one).
///
/// A place is the last item's sort key — never an offset — so a page starts where the previous
/// one ended however many items were added or removed meanwhile, and page 1,000 costs what
/// page 1 costs: the store seeks to the key on an index of that order.
public struct PageRequest<Place: Codable & Hashable & Sendable>: Hashable, Sendable {
    /// The items a page holds when a request does not say.
    public static var defaultLimit: Int { 100 }
    /// The items a page may hold.
    public static var limits: ClosedRange<Int> { 1...1_000 }

    /// At most this many items.
    public var limit: Int
    /// Where the previous page ended, or `nil` for the first page.
    public var after: Place?

    public init(limit: Int = Self.defaultLimit, after: Place? = nil) {
        self.limit = limit
        self.after = after
    }

    /// Reads a request's `limit` and `cursor` query values.
    public init(limit: String?, cursor: String?) throws(IsletError) {
        self.init()
        if let limit {
            guard let value = Int(limit), Self.limits.contains(value) else {
                throw IsletError(.invalidRequest, "limit must be a whole number from 1 to 1000.")
            }
            self.limit = value
        }
        after = try cursor.map { cursor throws(IsletError) in try PageCursor.place(Place.self, from: cursor) }
    }

    /// A page of `fetched` — the items from the request's place on, in the listing's order, at
    /// most `limit + 1` of them: the one beyond the page only says that another page follows.
    public func page<Item>(of fetched: [(item: Item, place: Place)]) -> Page<Item> {
        let kept = fetched.prefix(limit)
        let next = fetched.count > limit ? kept.last.map { PageCursor.cursor(for: $0.place) } : nil
        return Page(items: kept.map(\.item), next: next)
    }

    /// A page of `fetched` (as `page(of:)` takes it) holding only the items `shown` lets
    /// through: whether another page follows, and where it starts, are the fetch's.
    public func page<Item>(of fetched: [(item: Item, place: Place)], showing shown: (Item) throws -> Bool) rethrows -> Page<Item> {
        let page = self.page(of: fetched)
        return Page(items: try page.items.filter(shown), next: page.next)
    }

    /// A page of a whole listing held in memory, in the order of its places: the items whose
    /// place comes after the request's. For listings that stay short (an app's channels, an
    /// activity's history); a long one is paged by its store on an index.
    public func page<Item>(ofAll items: [Item], place: (Item) -> Place) -> Page<Item> where Place: Comparable {
        let placed = items.map { (item: $0, place: place($0)) }.sorted { $0.place < $1.place }
        let from = after.map { after in placed.firstIndex { after < $0.place } ?? placed.endIndex } ?? placed.startIndex
        return page(of: Array(placed[from...].prefix(limit + 1)))
    }
}

/// Where a broadcast channel, or anything else listed oldest first, stands in its listing:
/// when it was made, then its id.
public struct CreationPlace: Codable, Hashable, Comparable, Sendable {
    /// When it was made, in seconds since 1970.
    public var time: Double
    /// Its id.
    public var id: String

    public init(_ time: Date, _ id: String) {
        self.time = time.timeIntervalSince1970
        self.id = id
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.time, lhs.id) < (rhs.time, rhs.id)
    }
}

/// One page of a listing, and the cursor of the next while more remain.
public struct Page<Item: Sendable>: Sendable {
    /// The items, in the listing's order.
    public var items: [Item]
    /// Passed back as `?cursor=`, the next page; `nil` on the last.
    public var next: String?

    public init(items: [Item], next: String?) {
        self.items = items
        self.next = next
    }

    /// The same page with its items changed one by one.
    public func map<Other>(_ transform: (Item) throws -> Other) rethrows -> Page<Other> {
        Page<Other>(items: try items.map(transform), next: next)
    }
}

/// A cursor as the API hands it out: opaque to clients, it is a version byte and the place's
/// JSON, base64url-encoded without padding. The version lets a later order refuse an older
/// cursor with a clear error instead of misreading it.
public enum PageCursor {
    static let version: UInt8 = 1

    /// The cursor naming `place`.
    public static func cursor<Place: Encodable>(for place: Place) -> String {
        // A place is a few numbers and strings: encoding it cannot fail.
        let json = (try? JSONEncoder().encode(place)) ?? Data()
        return Base64URL.encode(Data([version]) + json)
    }

    /// The place a cursor names; a cursor this server did not hand out for this listing is refused.
    public static func place<Place: Decodable>(_ type: Place.Type, from cursor: String) throws(IsletError) -> Place {
        let refused = IsletError(.invalidRequest, "The cursor is not one this listing gave; pass back the \"next\" of its previous page.")
        guard cursor.utf8.count <= 1_024 else { throw refused }
        guard let data = Base64URL.decode(cursor), data.first == version,
            let place = try? JSONDecoder().decode(Place.self, from: data.dropFirst())
        else { throw refused }
        return place
    }
}
