import CFileOps
import CSQLitePolicy
import Foundation
import ReceiptCommands

// Process-wide policy is the executable's to set, never a library's. The imports' short-lived threads
// (parsing, hashing, reading) would each take a malloc arena of their own, up to eight per core, and
// every arena keeps what was freed in it: one per core holds the peak RSS of a 100,000-row manifest
// ~8 MB lower (see "Memory" in docs/DESIGN.md).
cfileops_limit_malloc_arenas(Int32(max(2, ProcessInfo.processInfo.activeProcessorCount)))
// glibc's default threshold for blocks with pages of their own (128 KiB), fixed: left to slide, it
// rose as large blocks were freed and a million-row manifest import kept ~7 MB more of freed heap
// resident (88-92 -> 82-83 MB at 400,000 rows, same time; docs/BENCHMARKS.md).
cfileops_fix_malloc_mmap_threshold(128 << 10)
// SQLite's memory statistics (nothing here reads them) lock a process-wide mutex for every
// allocation SQLite makes: off, the 100,000-row manifest import takes ~5 % less time (docs/DESIGN.md,
// "Memory"). Before the first connection, or SQLite refuses (and keeps them: harmless).
_ = csqlite_memstatus_off()

await ReceiptCommand.run(arguments: nil)
