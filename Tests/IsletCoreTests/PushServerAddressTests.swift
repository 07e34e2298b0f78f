import Foundation
import IsletCore
import Testing

/// A delivery credential's `url`: `https://host[:port]` and nothing else, read by one rule where
/// it enters and before every request.
@Suite("Push server address")
struct PushServerAddressTests {
    func refusal(_ text: String) -> String? {
        do {
            _ = try PushServerAddress(text)
            return nil
        } catch {
            #expect(error.reason == .invalidRequest)
            return error.message
        }
    }

    @Test func aPortBeyondSixteenBitsIsRefusedNotHandedToTheHTTPClient() throws {
        // 99999 and 65536 trapped inside async-http-client (SocketAddress), at every start.
        for port in ["99999", "65536", "0", "-1", "123456", "18446744073709551617", "80a", ""] {
            #expect(refusal("https://127.0.0.1:\(port)")?.contains("port must be a number from 1 to 65535") == true, "\(port)")
        }
        #expect(try PushServerAddress("https://127.0.0.1:65535").port == 65535)
        #expect(try PushServerAddress("https://127.0.0.1:1").port == 1)
    }

    @Test func credentialsFragmentsQueriesAndPathsAreRefused() {
        #expect(refusal("https://user:password@127.0.0.1:2197")?.contains("user name or password") == true)
        #expect(refusal("https://127.0.0.1:2197#fragment")?.contains("fragment") == true)
        #expect(refusal("https://127.0.0.1:2197?x=1")?.contains("query") == true)
        #expect(refusal("https://127.0.0.1:2197/3/device")?.contains("path") == true)
    }

    @Test func onlyHTTPSWithAHostIsAnAddress() {
        for text in ["http://127.0.0.1:2197", "127.0.0.1:2197", "https://", "https://:2197", "ftp://x", "https://exa mple.com",
            "https://-bad.example", "https://a..b", "https://[::1", "https://[::1]x", "https://[fe80::1%25eth0]", "https://ex%41mple.com",
            "https://\(String(repeating: "a", count: 64)).com"]
        {
            #expect(refusal(text) != nil, "\(text)")
        }
    }

    @Test func anAddressIsKeptInOneFormWithoutItsTrailingSlash() throws {
        #expect(try PushServerAddress("https://127.0.0.1:2197/").description == "https://127.0.0.1:2197")
        #expect(try PushServerAddress("HTTPS://API.Sandbox.Push.Apple.com").description == "https://api.sandbox.push.apple.com")
        #expect(try PushServerAddress("https://[::1]:2197").description == "https://[::1]:2197")
        #expect(try PushServerAddress("https://islet-b.internal:443").port == 443)
    }

    @Test func whatIsAcceptedReadsTheSameThroughFoundation() throws {
        for text in ["https://127.0.0.1:2197", "https://[::1]:8443", "https://api.push.apple.com", "https://a-b.c-d.example:1"] {
            let address = try PushServerAddress(text)
            let components = try #require(URLComponents(string: address.description))
            #expect(components.port == address.port)
            #expect(components.user == nil && components.password == nil && components.fragment == nil && components.query == nil)
            #expect(components.path.isEmpty)
            #expect(try PushServerAddress(address.description) == address)
        }
    }
}
