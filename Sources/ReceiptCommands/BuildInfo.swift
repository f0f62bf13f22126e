import CFileOps

/// What `receipt --version` prints: the version, kept here (one place), and the commit the build
/// was given (`tools/build-release`; "unknown" from a plain `swift build`, which cannot know it
/// without a build plugin).
enum BuildInfo {
    static let version = "0.9.0"
    static var commit: String { String(cString: cfileops_build_commit()) }

    struct JSON: Encodable {
        let version: String
        let commit: String
    }

    static func print(json: Bool) throws {
        if json { return try Output.json(JSON(version: version, commit: commit)) }
        Output.line("receipt \(version) (\(commit))")
    }
}
