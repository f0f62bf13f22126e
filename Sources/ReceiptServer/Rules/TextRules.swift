import ReceiptWire

/// Extracted text (docs/PROTOCOL.md, "Extracted text"): whose a text is, who reads it, whose
/// counter moves; the flow written once over the storage protocol. A text is kept per zone owner:
/// one household's text is never another's.
extension ServerStore {
    /// Keeps each text (its `sha256` set) for every owner of a zone the caller can read that
    /// references the blob, unless that owner has one of that blob and version already (the first
    /// stays: a later member cannot replace what the others pulled), in one transaction with one
    /// move of each reader's counter; returns the addresses refused because the caller cannot read
    /// a zone referencing the blob. Over quota, keeping nothing, when the texts would take an owner
    /// past its quota. Addresses and versions are already validated.
    public func putTexts(_ texts: [WireText], version: String, caller: Account) async throws -> [String] {
        let now = ServerRules.now()
        return try await transaction(.write) { tx in
            var refused: [String] = []
            var kept: [(text: WireText, owners: [Int64])] = []
            for text in texts {
                let owners = try await text.sha256.asyncMap { try await tx.textOwners(blob: $0, reader: caller.id) } ?? []
                if owners.isEmpty { refused.append(text.sha256 ?? "") } else { kept.append((text, owners)) }
            }
            // The owners' rows are locked first, in id order (withinQuota), then the texts written in
            // address order: two uploads at once wait for each other instead of deadlocking.
            try await ServerRules.withinQuota(tx, accounts: kept.flatMap(\.owners)) {
                var readers: Set<Int64> = []
                for (text, owners) in kept.sorted(by: { ($0.text.sha256 ?? "") < ($1.text.sha256 ?? "") }) {
                    guard let blob = text.sha256 else { continue }
                    for owner in owners where try await tx.insertText(owner: owner, blob: blob, version: version, text: text.text,
                                                                      failure: text.failed, uploadedAt: now) {
                        // The owner and the participants of its zones referencing the blob read it.
                        readers.insert(owner)
                        readers.formUnion(try await tx.participants(owner: owner, referencing: blob))
                    }
                }
                for reader in readers.sorted() { try await tx.bumpTextSequence(account: reader) }
            }
            return refused
        }
    }

    /// `PUT /v1/text/{sha256}/{version}`: one text; not found when the caller cannot read the blob.
    func putText(_ sha256: String, version: String, _ text: WireText, caller: Account) async throws {
        let refused = try await putTexts([WireText(sha256: sha256, text: text.text, failed: text.failed)], version: version,
                                         caller: caller)
        if !refused.isEmpty { throw ServerError.notFound("blob \(sha256)") }
    }

    /// The caller's text counter (0 before any text it can read was stored): it moves whenever a
    /// text the caller can read is stored.
    public func textSequence(caller: Account) async throws -> Int64 {
        try await transaction(.read) { tx in try await tx.textSequence(account: caller.id) }
    }

    /// Of `blobs`, those the caller can read for which an owner it reads them through has no text of `version`.
    public func textWant(_ blobs: [String], version: String, caller: Account) async throws -> [String] {
        try await transaction(.read) { tx in
            var want: [String] = []
            for blob in blobs {
                for owner in try await tx.textOwners(blob: blob, reader: caller.id)
                where !(try await tx.hasText(owner: owner, blob: blob, version: version)) {
                    want.append(blob)
                    break
                }
            }
            return want
        }
    }

    /// The texts of `blobs` for `version` that the caller can read, in order, stopping after about
    /// `byteLimit` bytes (`more`). A blob the caller reads through several owners' zones gets its own
    /// text first, else the text of the owner with the smallest id.
    public func texts(_ blobs: [String], version: String, caller: Account, byteLimit: Int) async throws -> WireTextFetchResponse {
        try await transaction(.read) { tx in
            var answer = WireTextFetchResponse(texts: [], more: false)
            var bytes = 0
            for blob in blobs {
                guard let found = try await tx.readableText(blob: blob, version: version, reader: caller.id) else { continue }
                bytes += (found.text?.utf8.count ?? 0) + (found.failure?.utf8.count ?? 0)
                if bytes > byteLimit && !answer.texts.isEmpty {
                    answer.more = true
                    break
                }
                answer.texts.append(WireText(sha256: blob, text: found.text, failed: found.failure))
            }
            return answer
        }
    }
}

extension Optional {
    fileprivate func asyncMap<U>(_ transform: (Wrapped) async throws -> U) async rethrows -> U? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
