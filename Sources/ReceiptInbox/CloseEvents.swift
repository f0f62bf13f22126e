#if canImport(Glibc)
import Glibc
#endif

/// inotify where the kernel offers it: a wake-up when a file under the inbox is closed after
/// writing or moved in, so that its settle time starts then, not at the next poll. Only a wake-up: when
/// inotify is missing, out of watches or silent (network file systems), polling still finds every
/// file. Each folder of the inbox is watched; folders appearing later are added at the next poll.
final class CloseEvents {
    /// The inotify descriptor, or -1 when inotify is not available.
    let fd: Int32
    private var folderByWatch: [Int32: String] = [:]
    private var watched: Set<String> = []

    init() {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Watches the folders not yet watched (a folder that went away simply drops out).
    func watch(_ folders: [String]) {
        guard fd >= 0 else { return }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_ONLYDIR)
        for folder in folders where !watched.contains(folder) {
            let wd = inotify_add_watch(fd, folder, mask)
            guard wd >= 0 else { continue }
            folderByWatch[wd] = folder
            watched.insert(folder)
        }
    }

    /// Reads the pending events (forgetting folders that went away).
    func drain() {
        guard fd >= 0 else { return }
        let size = 64 * 1024
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer.baseAddress, size)
            guard n > 0 else { break }
            var offset = 0
            // struct inotify_event: wd, mask, cookie, len (4 bytes each), then len bytes of name.
            while offset + 16 <= n {
                let wd = buffer.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                offset += 16 + length
                if mask & UInt32(IN_IGNORED) != 0, let folder = folderByWatch.removeValue(forKey: wd) {
                    watched.remove(folder)
                }
            }
        }
    }
}
