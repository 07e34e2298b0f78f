// ActivityKit brings Foundation with it (its API is made of `Date`s and `Data`), so code that
// imports only ActivityKit uses `Date` freely; IsletKit does the same.
@_exported import Foundation
