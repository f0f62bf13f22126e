import Foundation

/// The headers of a browser's request the web view reads as text: the multipart upload's content
/// type and parts' `Content-Disposition`, the `Origin`/`Referer` of a POST.
public enum WebHeaders {
    /// The `boundary` parameter of a `multipart/form-data` content type.
    public static func boundary(_ contentType: String?) -> String? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.trimmingCharacters(in: .whitespaces)
            guard pair.lowercased().hasPrefix("boundary=") else { continue }
            let value = pair.dropFirst("boundary=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            return (1...70).contains(value.utf8.count) ? value : nil
        }
        return nil
    }

    /// Why a file part's name cannot be kept (400), nil when it can: one with a NUL or `/` is a cut
    /// string or a path, not a name, and the vault refuses it too (docs/PROTOCOL.md, "Web view").
    public static func refusal(ofFileName name: String) -> WebFormError? {
        guard name.utf8.contains(0) || name.contains("/") else { return nil }
        let shown = name.replacingOccurrences(of: "\u{0}", with: "\\0").prefix(100)
        return WebFormError("the file name \(shown) contains a NUL or '/': a file is sent under its name alone")
    }

    /// The name after its last `\` (a path as old Windows browsers send it), without control
    /// characters, at most 255 bytes; `upload` when nothing is left.
    public static func safeName(_ name: String) -> String {
        let last = name.split(separator: "\\").last.map(String.init) ?? ""
        var cleaned = String(last.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }.map(Character.init))
        while cleaned.utf8.count > 255 { cleaned.removeLast() }
        return cleaned.isEmpty || cleaned == "." || cleaned == ".." ? "upload" : cleaned
    }

    /// A parameter of a `Content-Disposition: form-data; name="..."; filename="..."` header, as
    /// browsers send it (a quoted value with `"` sent as `%22`).
    public static func parameter(_ key: String, in header: String) -> String? {
        var rest = Substring(header)
        while let semicolon = rest.firstIndex(of: ";") {
            rest = rest[rest.index(after: semicolon)...].drop(while: { $0 == " " })
            guard rest.lowercased().hasPrefix(key + "=") else { continue }
            let value = rest.dropFirst(key.count + 1)
            if value.hasPrefix("\"") {
                let body = value.dropFirst()
                return String(body[..<(body.firstIndex(of: "\"") ?? body.endIndex)]).replacingOccurrences(of: "%22", with: "\"")
            }
            return String(value[..<(value.firstIndex(of: ";") ?? value.endIndex)])
        }
        return nil
    }

    /// True when the URL `claimed` has `scheme` and the host and port of `authority` (the request's
    /// `Host`), a missing port being the scheme's default.
    public static func isSameOrigin(_ claimed: String, authority: String?, scheme: String) -> Bool {
        let defaultPort = scheme == "https" ? 443 : 80
        guard let authority, let origin = URLComponents(string: claimed), origin.scheme?.lowercased() == scheme,
              origin.user == nil, origin.password == nil, let host = origin.host?.lowercased(), !host.isEmpty,
              let served = URLComponents(string: "\(scheme)://\(authority)"), served.path.isEmpty, served.query == nil, served.user == nil,
              let servedHost = served.host?.lowercased() else { return false }
        return host == servedHost && (origin.port ?? defaultPort) == (served.port ?? defaultPort)
    }
}
