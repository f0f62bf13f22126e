import BlobStore

// BlobStore's names, spelled unambiguously for files that also import NIO (which has its own
// `IOError` and `FileDescriptor`).
typealias BlobFileDescriptor = FileDescriptor
typealias BlobIOError = IOError
