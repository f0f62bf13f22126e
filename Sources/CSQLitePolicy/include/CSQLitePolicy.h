#ifndef CSQLITEPOLICY_H
#define CSQLITEPOLICY_H

/// sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0): SQLite stops keeping its process-wide memory
/// statistics, which take a global mutex around every allocation it makes. Only before SQLite is
/// initialized (the first connection): returns SQLITE_OK (0), or SQLITE_MISUSE after. A C function
/// because sqlite3_config is variadic, which Swift cannot call.
int csqlite_memstatus_off(void);

#endif
