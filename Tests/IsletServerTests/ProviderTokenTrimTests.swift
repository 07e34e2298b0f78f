import Foundation
import Testing

@testable import IsletAPNs

/// The bearer token's fast path (a token that starts and ends with a JWT character is taken as
/// is) must trim exactly what Foundation's trimming did.
@Suite struct ProviderTokenTrimTests {
    @Test(arguments: [
        "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJUIn0.c2ln", " eyJ.e30.sig", "eyJ.e30.sig\t", "\u{00A0}eyJ.e30.sig\u{2003}",
        "  ", "", "a", "eyJ.e30.sig=", "=eyJ", " a b ", "é.x", "x.\u{00A0}",
    ])
    func trimsAsFoundationDoes(_ token: String) {
        #expect(ProviderTokenVerifier.trimmed(Substring(token)) == token.trimmingCharacters(in: .whitespaces))
    }
}
