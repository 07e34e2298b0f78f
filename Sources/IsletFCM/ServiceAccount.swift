import CryptoExtras
import Foundation
import IsletCore
import JWTKit

/// A Google service account, as Google's console downloads it (the JSON file a provider gives
/// `firebase-admin`): what Islet sends to FCM with, and what Islet — playing Google — issues.
///
/// Read once, where it enters (`read`), and checked there: an RSA key of at least 2,048 bits
/// that signs, a `token_uri` that is an `https` address, a project id as Google forms them.
/// A value that breaks them never reaches the HTTP client or the signer.
public struct ServiceAccount: Codable, Hashable, Sendable {
    /// `service_account`.
    public var type: String
    /// The Firebase (Google Cloud) project: what `messages:send` is addressed to.
    public var projectId: String
    /// The key's id: the assertion's `kid`.
    public var privateKeyId: String
    /// The RSA private key, PEM (PKCS #8, `BEGIN PRIVATE KEY`).
    public var privateKey: String
    /// The account's address: the assertion's `iss`.
    public var clientEmail: String
    public var clientId: String?
    public var authUri: String?
    /// Where an assertion is exchanged for an access token: the assertion's `aud`.
    public var tokenUri: String
    public var authProviderX509CertUrl: String?
    public var clientX509CertUrl: String?
    public var universeDomain: String?

    enum CodingKeys: String, CodingKey {
        case type
        case projectId = "project_id"
        case privateKeyId = "private_key_id"
        case privateKey = "private_key"
        case clientEmail = "client_email"
        case clientId = "client_id"
        case authUri = "auth_uri"
        case tokenUri = "token_uri"
        case authProviderX509CertUrl = "auth_provider_x509_cert_url"
        case clientX509CertUrl = "client_x509_cert_url"
        case universeDomain = "universe_domain"
    }

    /// Google's token endpoint, where its console's accounts point.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"
    /// The largest service-account file read: Google's are about 2.4 KB.
    public static let maximumSize = 16 * 1024

    /// Reads a service-account JSON and checks it (`check`), or says what is wrong with it.
    public static func read(_ json: Data) throws(IsletError) -> ServiceAccount {
        guard json.count <= maximumSize else {
            throw IsletError(.payloadTooLarge, "serviceAccount is at most \(maximumSize) bytes; Google's are about 2.4 KB.")
        }
        let account: ServiceAccount
        do {
            account = try JSONDecoder().decode(ServiceAccount.self, from: json)
        } catch {
            throw IsletError(
                .invalidRequest,
                "serviceAccount must be the service-account JSON Google's console downloads (type, project_id, private_key_id, private_key, client_email, token_uri): \(Self.describe(error))"
            )
        }
        try account.check()
        return account
    }

    /// Checks every field a sender uses, naming the one that is wrong.
    public func check() throws(IsletError) {
        guard type == "service_account" else {
            throw IsletError(.invalidRequest, "serviceAccount.type must be \"service_account\", not \"\(type.prefix(40))\".")
        }
        guard Self.isProjectId(projectId) else {
            throw IsletError(
                .invalidRequest,
                "serviceAccount.project_id must be a Google project id: 6 to 30 lower-case letters, digits and hyphens, starting with a letter (\"\(projectId.prefix(40))\" is not)."
            )
        }
        guard (1...128).contains(privateKeyId.utf8.count), privateKeyId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw IsletError(.invalidRequest, "serviceAccount.private_key_id must be the key's id: 1 to 128 letters and digits.")
        }
        guard (3...254).contains(clientEmail.utf8.count), clientEmail.contains("@"), !clientEmail.contains(where: \.isWhitespace) else {
            throw IsletError(.invalidRequest, "serviceAccount.client_email must be the account's address (name@project.iam.gserviceaccount.com).")
        }
        _ = try signingKey()
        _ = try TokenAddress(tokenUri)
    }

    /// The private key, as the signer takes it.
    func signingKey() throws(IsletError) -> JWTKit.Insecure.RSA.PrivateKey {
        do {
            return try JWTKit.Insecure.RSA.PrivateKey(pem: privateKey)
        } catch {
            throw IsletError(
                .invalidRequest,
                "serviceAccount.private_key must be the account's RSA private key (PEM, BEGIN PRIVATE KEY) of at least 2,048 bits: \(error)"
            )
        }
    }

    /// The public half of the key, PEM: what Islet, playing Google, keeps to check assertions.
    public func publicKey() throws(IsletError) -> String {
        try signingKey().publicKey.pemRepresentation
    }

    /// A new account with a fresh 2,048-bit key, shaped as Google's console makes them, whose
    /// `token_uri` is `tokenURI` (Islet's own, to play Google).
    public static func issue(project: String, tokenURI: String) throws(IsletError) -> ServiceAccount {
        guard isProjectId(project) else {
            throw IsletError(
                .invalidRequest,
                "A project id is 6 to 30 lower-case letters, digits and hyphens, starting with a letter: \"\(project.prefix(40))\" is not."
            )
        }
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        } catch {
            throw IsletError(.internalError, "Could not make an RSA key: \(error)")
        }
        let keyId = (0..<20).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let clientId = "1" + (0..<20).map { _ in String(Int.random(in: 0...9)) }.joined()
        // Google's are firebase-adminsdk-<5 letters and digits>@<project>.iam.gserviceaccount.com.
        let suffix = String((0..<5).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
        let email = "firebase-adminsdk-\(suffix)@\(project).iam.gserviceaccount.com"
        let account = ServiceAccount(
            type: "service_account", projectId: project, privateKeyId: keyId, privateKey: key.pkcs8PEMRepresentation + "\n",
            clientEmail: email, clientId: clientId, authUri: "https://accounts.google.com/o/oauth2/auth", tokenUri: tokenURI,
            authProviderX509CertUrl: "https://www.googleapis.com/oauth2/v1/certs",
            clientX509CertUrl: "https://www.googleapis.com/robot/v1/metadata/x509/" + (email.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? email),
            universeDomain: "googleapis.com"
        )
        try account.check()
        return account
    }

    /// Google's rule for project ids: 6 to 30 characters, lower-case letters, digits and
    /// hyphens, starting with a letter and not ending with a hyphen.
    public static func isProjectId(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (6...30).contains(bytes.count), let first = bytes.first, let last = bytes.last else { return false }
        let lower = UInt8(ascii: "a")...UInt8(ascii: "z")
        let digit = UInt8(ascii: "0")...UInt8(ascii: "9")
        return lower.contains(first) && last != UInt8(ascii: "-")
            && bytes.allSatisfy { lower.contains($0) || digit.contains($0) || $0 == UInt8(ascii: "-") }
    }

    private static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, _)?: "\(key.stringValue) is missing"
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) must be a string"
        case .dataCorrupted?: "it is not JSON"
        default: "it cannot be read"
        }
    }
}

/// A `token_uri`: an `https` address with a path, whose host and port obey the rules of a push
/// server's address (`PushServerAddress`).
public struct TokenAddress: Hashable, Sendable, CustomStringConvertible {
    /// `https://host[:port]`.
    public let origin: PushServerAddress
    /// The path, starting with `/` (`/token`).
    public let path: String

    public var description: String { origin.description + path }

    public init(_ text: String) throws(IsletError) {
        let prefix = "https://"
        guard text.utf8.count <= 300, text.lowercased().hasPrefix(prefix) else {
            throw IsletError(.invalidRequest, "serviceAccount.token_uri must be an https address of at most 300 characters, such as \(ServiceAccount.googleTokenURI).")
        }
        let rest = text.dropFirst(prefix.count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let path = String(rest[slash...])
        guard path.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "?" && $0 != "#" && $0 != "@" }) else {
            throw IsletError(.invalidRequest, "serviceAccount.token_uri's path must be plain (no query, fragment or spaces), such as /token.")
        }
        do {
            origin = try PushServerAddress(prefix + rest[..<slash])
        } catch {
            throw IsletError(.invalidRequest, "serviceAccount.token_uri: \(error.message.replacingOccurrences(of: "url", with: "its address"))")
        }
        self.path = path.isEmpty ? "/" : path
    }
}
