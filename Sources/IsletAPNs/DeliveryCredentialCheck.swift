import Foundation
import IsletCore
import SwiftASN1
import X509

/// Whether a delivery credential can be sent with: its address (`PushServerAddress`), the
/// authority it trusts, and its key. Registration runs it, so that a credential the sender could
/// never use is refused at once with the part that is wrong, instead of failing every delivery
/// for hours; the sender reads the same parts by the same rules before every request.
public enum DeliveryCredentialCheck {
    /// Refuses a credential whose address, authority or key cannot be used, naming the part.
    ///
    /// - Parameters:
    ///   - credential: What is kept of the credential.
    ///   - privateKey: The `.p8` key's PEM text.
    public static func check(_ credential: DeliveryCredential, privateKey: String) async throws(IsletError) {
        if let url = credential.url { _ = try PushServerAddress(url) }
        if let pem = credential.caCertificate { _ = try authorities(pem) }
        do {
            let signer = try await ProviderTokenSigner(p8: privateKey, keyId: credential.keyId, teamId: credential.teamId)
            _ = try await signer.token()
        } catch {
            throw IsletError(.invalidRequest, "privateKey must be the PEM text of an ES256 .p8 key (BEGIN PRIVATE KEY) that signs; this one does not.")
        }
    }

    /// The certificates of an authority given as PEM: one or more `CERTIFICATE` blocks, each a
    /// certificate X.509 can read, and nothing else.
    public static func authorities(_ pem: String) throws(IsletError) -> [Certificate] {
        let refusal = "caCertificate must be the PEM text (BEGIN CERTIFICATE) of the authority to trust for url"
        guard pem.utf8.count <= 64 << 10 else { throw IsletError(.invalidRequest, "\(refusal); this one is over 64 KiB.") }
        let documents: [PEMDocument]
        do {
            documents = try PEMDocument.parseMultiple(pemString: pem)
        } catch {
            throw IsletError(.invalidRequest, "\(refusal); this one is not PEM.")
        }
        guard !documents.isEmpty else { throw IsletError(.invalidRequest, "\(refusal); this one holds none.") }
        var certificates: [Certificate] = []
        for (index, document) in documents.enumerated() {
            guard document.discriminator == "CERTIFICATE" else {
                throw IsletError(.invalidRequest, "\(refusal); its block \(index + 1) is a \(document.discriminator.prefix(40)), not a certificate.")
            }
            do {
                certificates.append(try Certificate(derEncoded: document.derBytes))
            } catch {
                throw IsletError(.invalidRequest, "\(refusal); its block \(index + 1) cannot be read as an X.509 certificate.")
            }
        }
        return certificates
    }
}
