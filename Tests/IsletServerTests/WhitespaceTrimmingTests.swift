import Foundation
import IsletTestSupport
import Testing

import IsletCore

/// The fast path of trimming a key or a token (text that starts and ends with printable ASCII is
/// taken as is) must trim exactly what Foundation's trimming did.
@Suite(.hangDetector) struct WhitespaceTrimmingTests {
    @Test(arguments: [
        "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJUIn0.c2ln", " eyJ.e30.sig", "eyJ.e30.sig\t", "\u{00A0}eyJ.e30.sig\u{2003}",
        "  ", "", "a", "eyJ.e30.sig=", "=eyJ", " a b ", "é.x", "x.\u{00A0}",
    ])
    func trimsAsFoundationDoes(_ token: String) {
        #expect(Substring(token).trimmedOfWhitespace() == token.trimmingCharacters(in: .whitespaces))
    }
}
