#pragma once
// The run store's tables and their migrations. schema_version holds one row, the number of migrations
// applied; migration i (0-based) takes the database from version i to i + 1. A new release appends a
// migration and never edits an old one.
#include <cstdint>

#include "store/sqlite.h"

namespace ls::store {

inline constexpr int64_t kSchemaVersion = 2;

// The version recorded in the file (0 for a database without tables). Throws ls::Error naming the file
// when it is newer than kSchemaVersion, when schema_version is malformed, or when the file holds tables but
// no schema_version (not ours). Reads only: run it before changing anything in a file.
int64_t check_schema(const Database& db);

// Brings the database up to kSchemaVersion in one write transaction; a no-op (no write lock) when it is
// there already. Throws as check_schema() does.
void migrate(Database& db);

}  // namespace ls::store
