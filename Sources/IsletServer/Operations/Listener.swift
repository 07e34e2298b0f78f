import Foundation
import NIOCore
import ServiceLifecycle

/// The error for an address another process holds, naming the setting that chose it.
public struct AddressInUse: Error, CustomStringConvertible {
    /// What could not listen: "the REST API", "the APNs endpoint".
    public var listener: String
    /// Where: `127.0.0.1:8080`.
    public var address: String
    /// The setting and flag that choose it.
    public var setting: String

    public var description: String {
        "\(listener) cannot listen on \(address): the address is in use (is another Islet running?). Choose another with \(setting)."
    }

    /// `error` as an `AddressInUse`, when it is one.
    static func from(_ error: any Error, listener: String, address: String, setting: String) -> (any Error) {
        guard let error = error as? IOError, error.errnoCode == EADDRINUSE else { return error }
        return AddressInUse(listener: listener, address: address, setting: setting)
    }
}

/// A listening service whose bind failure says which address and which setting.
struct Listener: Service {
    let service: any Service
    let listener: String
    let address: String
    let setting: String

    func run() async throws {
        do {
            try await service.run()
        } catch {
            throw AddressInUse.from(error, listener: listener, address: address, setting: setting)
        }
    }
}
