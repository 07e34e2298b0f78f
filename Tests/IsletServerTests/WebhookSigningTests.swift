import Foundation
import IsletCore
import IsletTestSupport
@testable import IsletWebhooks
import Testing

/// Islet's webhook signatures, checked by Standard Webhooks' own verifier, and the URLs a
/// webhook may go to.
struct WebhookSigningTests {
    /// Verifies each message with the reference verifier, under `secret`; prints one line per
    /// message: "ok" or the verifier's error.
    private func verify(_ messages: [(id: String, timestamp: Int64, body: String, signature: String)], secret: String) async throws -> [String] {
        let script = """
            import json, sys
            from standardwebhooks.webhooks import Webhook
            secret, messages = sys.argv[1], json.load(sys.stdin)
            for m in messages:
                try:
                    Webhook(secret).verify(m["body"], {"webhook-id": m["id"], "webhook-timestamp": str(m["timestamp"]), "webhook-signature": m["signature"]})
                    print("ok")
                except Exception as error:
                    print(type(error).__name__)
            """
        let input = try JSONSerialization.data(withJSONObject: messages.map {
            ["id": $0.id, "timestamp": $0.timestamp, "body": $0.body, "signature": $0.signature] as [String: Any]
        })
        let run = try await runProgram(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, secret], input: input, timeout: 60)
        #expect(run.status == 0, "\(run.stderr)")
        return run.stdout.split(separator: "\n").map(String.init)
    }

    @Test(.enabled(if: standardWebhooksAvailable, "needs the standardwebhooks package (pip)"))
    func theReferenceVerifierAcceptsIsletsSignaturesAndRefusesTamperedOnes() async throws {
        let secret = WebhookSecret.generate()
        let previous = WebhookSecret.generate()
        let now = Int64(Date().timeIntervalSince1970)
        let body = #"{"id":"evt_1","type":"activity.updated","data":{"activity":{"content":{"eta":"5 min ✓"}}}}"#
        let sign = { (id: String, body: String, secrets: [WebhookSecret]) in
            WebhookSignature.header(id: id, timestamp: now, body: Array(body.utf8), secrets: secrets)
        }
        let rotating = sign("evt_2", body, [secret, previous])
        let messages = [
            ("evt_1", now, body, sign("evt_1", body, [secret])),
            // While a secret rotates, both signatures go: each secret verifies the message.
            ("evt_2", now, body, rotating),
            // Another body, id or timestamp than the one signed.
            ("evt_1", now, body.replacingOccurrences(of: "5 min", with: "6 min"), sign("evt_1", body, [secret])),
            ("evt_3", now, body, sign("evt_1", body, [secret])),
            ("evt_1", now + 1, body, sign("evt_1", body, [secret])),
            // Signed by another secret only.
            ("evt_4", now, body, sign("evt_4", body, [previous])),
        ]
        #expect(try await verify(messages, secret: secret.text) == [
            "ok", "ok", "WebhookVerificationError", "WebhookVerificationError", "WebhookVerificationError", "WebhookVerificationError",
        ])
        #expect(try await verify([("evt_2", now, body, rotating)], secret: previous.text) == ["ok"])
        // Islet's own verifier (islet webhooks listen) agrees.
        #expect(WebhookSignature.verify(header: rotating, id: "evt_2", timestamp: now, body: Array(body.utf8), secret: previous))
        #expect(!WebhookSignature.verify(header: rotating, id: "evt_2", timestamp: now, body: Array((body + " ").utf8), secret: previous))
    }

    @Test func aSecretIsReadBackAndNeverPrinted() throws {
        let secret = WebhookSecret.generate()
        #expect(secret.text.hasPrefix("whsec_") && secret.key.count == 24)
        #expect(WebhookSecret(secret.text) == secret)
        #expect(WebhookSecret.generate() != secret)
        #expect("\(secret)" == "whsec_(hidden)" && !String(reflecting: secret).contains(secret.text.dropFirst(6)))
        for bad in ["", "whsec_", "whsec_!!", "sk_" + secret.text.dropFirst(6), "whsec_" + Data(count: 8).base64EncodedString()] {
            #expect(WebhookSecret(bad) == nil, "\(bad)")
        }
    }

    @Test func aWebhookGoesOnlyWhereItMay() throws {
        let allowed = ["https://hooks.example.com/islet", "https://93.184.216.34:8443/x", "http://127.0.0.1:3000/hook", "http://localhost:3000/",
                       "http://[::1]:3000/hook", "https://[2606:4700::1111]/"]
        for url in allowed { #expect(throws: Never.self, "\(url)") { try WebhookURL(url, allowPrivateNetworks: false) } }
        let refused = [
            "http://hooks.example.com/", "ftp://example.com/", "https://user:pass@example.com/", "https://example.com/#x", "/relative",
            "https://10.0.0.5/", "https://192.168.1.1/", "https://172.20.0.1/", "https://169.254.169.254/latest/meta-data",
            "https://100.64.0.1/", "https://127.0.0.1/", "https://[::1]/", "https://[fd00::1]/", "https://[fe80::1]/",
            "https://[::ffff:10.0.0.1]/", "https://[::ffff:127.0.0.1]/", "https://[64:ff9b::a9fe:a9fe]/", "https://0.0.0.0/",
            "https://224.0.0.1/", "https://255.255.255.255/", "https://[::]/", "https://example.com:0/", "https://example.com:70000/",
            "http://10.0.0.5:3000/", "https://" + String(repeating: "a", count: 2_100) + ".com/",
        ]
        for url in refused {
            #expect(throws: IsletError.self, "\(url)") { try WebhookURL(url, allowPrivateNetworks: false) }
        }
        // The admin's private network: https to it, not http.
        #expect(throws: Never.self) { try WebhookURL("https://10.0.0.5/", allowPrivateNetworks: true) }
        #expect(throws: IsletError.self) { try WebhookURL("http://10.0.0.5/", allowPrivateNetworks: true) }
        #expect(throws: IsletError.self) { try WebhookURL("https://224.0.0.1/", allowPrivateNetworks: true) }
        // A name is checked again by what it resolves to when a request connects.
        let named = try WebhookURL("https://hooks.example.com/", allowPrivateNetworks: false)
        #expect(named.refusal(of: [127, 0, 0, 1], allowPrivateNetworks: false) != nil)
        #expect(named.refusal(of: [93, 184, 216, 34], allowPrivateNetworks: false) == nil)
        let local = try WebhookURL("http://localhost:3000/", allowPrivateNetworks: false)
        #expect(local.refusal(of: [127, 0, 0, 1], allowPrivateNetworks: false) == nil)
        #expect(local.refusal(of: [93, 184, 216, 34], allowPrivateNetworks: false) != nil)
    }

    /// A host a resolver reads as an IPv4 address is one, however it is spelled: decimal,
    /// octal and hexadecimal parts, fewer than four parts, a trailing dot (the WHATWG URL
    /// standard's parser, which `inet_aton` agrees with). Each of these reaches 127.0.0.1, 0.0.0.0
    /// or 10.0.0.1 and was saved (issue 58); an IPv6 address carrying a loopback one is refused
    /// when saved and when a connection would use it.
    @Test func aHostSpelledInNumbersIsTheAddressAResolverReads() throws {
        let spelled: [(String, [UInt8])] = [
            ("2130706433", [127, 0, 0, 1]), ("0177.0.0.1", [127, 0, 0, 1]), ("0x7f.0.0.1", [127, 0, 0, 1]), ("127.1", [127, 0, 0, 1]),
            ("0", [0, 0, 0, 0]), ("10.1", [10, 0, 0, 1]), ("012.0.0.1", [10, 0, 0, 1]), ("127.0.0.1.", [127, 0, 0, 1]),
            ("0x7F000001", [127, 0, 0, 1]), ("0x7f.1", [127, 0, 0, 1]), ("127.0.1", [127, 0, 0, 1]), ("0x", [0, 0, 0, 0]),
        ]
        for (host, address) in spelled {
            #expect(IPAddressClass.parseIPv4(host) == address, "\(host)")
            #expect(throws: IsletError.self, "\(host)") { try WebhookURL("https://\(host)/hook", allowPrivateNetworks: false) }
            // As glibc's inet_aton reads it, where it reads it (it takes no trailing dot).
            var parsed = in_addr()
            if inet_aton(host, &parsed) != 0 { #expect(withUnsafeBytes(of: &parsed) { Array($0) } == address, "\(host)") }
        }
        // Allowed to a private network, the address checked is the one read.
        #expect(try WebhookURL("https://012.0.0.1/", allowPrivateNetworks: true).address == [10, 0, 0, 1])
        #expect(try WebhookURL("http://0x7f.1:3000/", allowPrivateNetworks: false).address == [127, 0, 0, 1])
        // What ends in a number and is no address is no name either.
        for host in ["1.2.3.4.5", "256.0.0.1", "0x100.0.0.1", "4294967296", "09.0.0.1", "1..1", "example.123"] {
            #expect(IPAddressClass.parseIPv4(host) == nil || !IPAddressClass.endsInANumber(host), "\(host)")
            #expect(throws: IsletError.self, "\(host)") { try WebhookURL("https://\(host)/", allowPrivateNetworks: true) }
        }
        // A resolver reads a name up to a NUL (the fuzz target found `2130706433%00…`).
        for host in ["127.0.0.1%00.example.com", "2130706433%00abc", "a%20b.example.com", "hooks.example.com%2F"] {
            #expect(throws: IsletError.self, "\(host)") { try WebhookURL("https://\(host)/", allowPrivateNetworks: true) }
        }
        for name in ["hooks.example.com", "example.com.", "1.example", "0x7f.example", "a1.b2", "1.2.3.0x1g"] {
            #expect(try WebhookURL("https://\(name)/", allowPrivateNetworks: false).address == nil, "\(name)")
        }
        // IPv4-compatible (::/96) and 6to4 (2002::/16) carry the IPv4 address they are classed by.
        for carrier in ["[::127.0.0.1]", "[2002:7f00:1::]", "[::10.0.0.1]", "[2002:a9fe:a9fe::1]"] {
            #expect(throws: IsletError.self, "\(carrier)") { try WebhookURL("https://\(carrier)/", allowPrivateNetworks: false) }
        }
        let named = try WebhookURL("https://hooks.example.com/", allowPrivateNetworks: false)
        #expect(named.refusal(of: IPAddressClass.parse("::127.0.0.1")!, allowPrivateNetworks: false) != nil)
        #expect(named.refusal(of: IPAddressClass.parse("2002:7f00:1::")!, allowPrivateNetworks: false) != nil)
        #expect(named.refusal(of: IPAddressClass.parse("2002:5db8:d822::1")!, allowPrivateNetworks: false) == nil)
        #expect(IPAddressClass.of(IPAddressClass.parse("::")!) == .unspecified && IPAddressClass.of(IPAddressClass.parse("::1")!) == .loopback)
    }
}
