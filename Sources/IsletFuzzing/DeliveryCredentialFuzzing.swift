import Foundation
import IsletAPNs
import IsletCore

extension FuzzTarget {
    /// A `PUT /v1/apps/{bundleId}/delivery` body, decoded as the route decodes it and checked as
    /// registration checks it (`DeliveryCredentialCheck`): refused with `invalidRequest` and a
    /// message, or accepted with an address the HTTP client can take as it is — https, a host,
    /// a port from 1 to 65535 or none, no user, password, query, fragment or path, read the same
    /// by Foundation and again by the check — an authority of one or more X.509 certificates,
    /// and a key that signs.
    public static let deliveryCredential = FuzzTarget(name: "delivery-credential") { data throws(FuzzFailure) in
        let decoded = data.withUnsafeBytes { raw in
            Result { () throws(IsletError) in try WireFormat.decodeRequest(DeliveryCredentialBody.self, from: raw) }
        }
        guard case .success(let body) = decoded else { return }
        let credential = DeliveryCredential(
            bundleId: "com.example.fuzz", environment: body.environment, teamId: body.teamId, keyId: body.keyId, url: body.url,
            caCertificate: body.caCertificate, createdAt: ProviderTokens.now
        )
        let refusal = blocking { () async -> IsletError? in
            do throws(IsletError) {
                try await DeliveryCredentialCheck.check(credential, privateKey: body.privateKey)
                return nil
            } catch {
                return error
            }
        }
        if let error = refusal {
            try expect(error.reason == .invalidRequest && !error.message.isEmpty, "refused with \(error)")
        } else {
            if let url = body.url { try checkAddress(url) }
            if let pem = body.caCertificate {
                let authorities = Result { () throws(IsletError) in try DeliveryCredentialCheck.authorities(pem) }
                guard case .success(let certificates) = authorities, !certificates.isEmpty else {
                    throw FuzzFailure("accepted an authority that reads as no certificate: \(pem.prefix(200))")
                }
            }
        }
    }
}

/// An accepted address is one form the HTTP client takes as it is.
private func checkAddress(_ url: String) throws(FuzzFailure) {
    guard let address = try? PushServerAddress(url) else { throw FuzzFailure("the check accepted \(url), the address refuses it") }
    try expect(address.port.map { (1...65535).contains($0) } ?? true, "accepted the port \(address.port ?? 0) in \(url)")
    try expect((try? PushServerAddress(address.description)) == address, "\(address) does not read back as itself")
    guard let components = URLComponents(string: address.description) else {
        throw FuzzFailure("Foundation cannot read \(address), accepted from \(url)")
    }
    try expect(
        components.scheme == "https" && components.port == address.port && components.user == nil && components.password == nil
            && components.query == nil && components.fragment == nil && components.path.isEmpty,
        "Foundation reads \(address) (from \(url)) as \(components)"
    )
}
