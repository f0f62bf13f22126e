import BlobStore

// BlobStore's IOError, spelled unambiguously for files that also import NIO (which has its own
// `IOError`).
typealias BlobIOError = IOError
