// libFuzzer's driver (in the runtime that -sanitize=fuzzer links). SwiftPM names an executable's entry
// point TARGET_main and points `main` at it, so libFuzzer's own main is not used: each target's
// TARGET_main calls this instead.
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
