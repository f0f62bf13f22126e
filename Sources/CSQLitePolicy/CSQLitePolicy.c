// SQLite's process-wide settings, which only the executable decides (never a library).
#include "CSQLitePolicy.h"
#include <sqlite3.h>

/// See CSQLitePolicy.h.
int csqlite_memstatus_off(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
