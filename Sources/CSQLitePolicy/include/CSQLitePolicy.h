#ifndef CSQLITEPOLICY_H
#define CSQLITEPOLICY_H

/// sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0): SQLite stops keeping its process-wide memory
/// statistics, which take a global mutex around every allocation it makes. Only before SQLite is
/// initialized (the first connection): returns SQLITE_OK (0), or SQLITE_MISUSE after. A C function
/// because sqlite3_config is variadic, which Swift cannot call.
int csqlite_memstatus_off(void);

/// sqlite3_temp_directory = `path`: where every connection of the process puts its temporary files
/// (statement journals, sorts and temporary tables too large for memory) instead of /var/tmp, /tmp
/// or the working folder. Process-wide and not thread-safe: set once, before the first connection.
void csqlite_temp_directory(const char *path);

#endif
