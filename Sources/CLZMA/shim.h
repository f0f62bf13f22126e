#include <lzma.h>
// Swift cannot import macros built with UINT32_C(); re-declare the ones we use.
static const uint32_t CLZMA_CONCATENATED = 0x08;
static const uint32_t CLZMA_TELL_NO_CHECK = 0x01;
static const uint64_t CLZMA_MEMLIMIT_UNLIMITED = UINT64_MAX;
static const uint32_t CLZMA_PRESET_EXTREME = 0x80000000;
