// SQLite's process-wide settings, which only the executable decides (never a library).
#include "CSQLitePolicy.h"
#include <sqlite3.h>

/// See CSQLitePolicy.h.
int csqlite_memstatus_off(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/// See CSQLitePolicy.h. SQLite frees the string only when it is replaced (PRAGMA temp_store_directory),
/// so it comes from sqlite3_malloc.
void csqlite_temp_directory(const char *path) {
    sqlite3_temp_directory = sqlite3_mprintf("%s", path);
}
