#include "store/schema.h"

#include <array>
#include <string>

#include "error.h"

namespace ls::store {
namespace {

// Times are REAL seconds since the Unix epoch. Enumerations (status, format) are TEXT checked by the
// reader rather than by CHECK constraints, so that a later version can add a value without rebuilding
// the table. metrics.rev orders writes within a run (see RunStore::metrics_changed).
constexpr const char* kVersion1 = R"sql(
CREATE TABLE runs (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  name         TEXT NOT NULL,
  created_at   REAL NOT NULL,
  started_at   REAL,
  finished_at  REAL,
  status       TEXT NOT NULL,
  model_path   TEXT NOT NULL,
  data_path    TEXT NOT NULL,
  config_json  TEXT NOT NULL,
  error        TEXT,
  out_dir      TEXT NOT NULL,
  writer_pid   INTEGER,
  heartbeat_at REAL
);
CREATE TABLE metrics (
  run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step         INTEGER NOT NULL CHECK (step >= 0),
  rev          INTEGER NOT NULL,
  time         REAL NOT NULL,
  loss         REAL,
  val_loss     REAL,
  lr           REAL,
  grad_norm    REAL,
  tokens_per_s REAL,
  gpu_ms_json  TEXT,
  PRIMARY KEY (run_id, step)
);
CREATE INDEX metrics_by_rev ON metrics (run_id, rev);
CREATE TABLE checkpoints (
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step       INTEGER NOT NULL,
  path       TEXT NOT NULL,
  created_at REAL NOT NULL,
  PRIMARY KEY (run_id, step)
);
CREATE TABLE exports (
  id         INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  path       TEXT NOT NULL,
  format     TEXT NOT NULL,
  created_at REAL NOT NULL
);
CREATE INDEX exports_by_run ON exports (run_id);
CREATE TABLE chats (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id       INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  adapter_path TEXT,
  created_at   REAL NOT NULL,
  title        TEXT NOT NULL
);
CREATE INDEX chats_by_run ON chats (run_id);
CREATE TABLE chat_messages (
  chat_id INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
  idx     INTEGER NOT NULL,
  role    TEXT NOT NULL,
  content TEXT NOT NULL,
  PRIMARY KEY (chat_id, idx)
);
CREATE TABLE settings (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
)sql";

// Version 2: what happened to a run besides its steps, e.g. "resumed" at a step (a resumed run continues
// its entry instead of starting a new one, so the entry says where the pieces join).
constexpr const char* kVersion2 = R"sql(
CREATE TABLE run_events (
  id      INTEGER PRIMARY KEY,
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  time    REAL NOT NULL,
  kind    TEXT NOT NULL,
  step    INTEGER,
  message TEXT NOT NULL
);
CREATE INDEX run_events_by_run ON run_events (run_id, id);
)sql";

constexpr std::array<const char*, kSchemaVersion> kMigrations = {kVersion1, kVersion2};

int64_t current_version(const Database& db) {
  const char* doing = "reading the schema version";
  bool has_version_table = false, has_other_tables = false;
  {
    auto q = db.query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
                      doing);
    while (q.step()) (q.text(0) == "schema_version" ? has_version_table : has_other_tables) = true;
  }
  if (!has_version_table) {
    if (has_other_tables)
      throw Error(db.path().string() + ": not a lorastudio run store (it has tables but no schema_version)");
    return 0;
  }
  auto q = db.query("SELECT version, (SELECT COUNT(*) FROM schema_version) FROM schema_version", doing);
  if (!q.step() || q.int64(1) != 1 || q.is_null(0))
    throw Error(db.path().string() + ": schema_version must hold exactly one version");
  return q.int64(0);
}

}  // namespace

int64_t check_schema(const Database& db) {
  const int64_t version = current_version(db);
  if (version > kSchemaVersion)
    throw Error(db.path().string() + ": schema version " + std::to_string(version) +
                " is newer than this lorastudio knows (" + std::to_string(kSchemaVersion) +
                "); open it with a newer lorastudio");
  if (version < 0) throw Error(db.path().string() + ": schema version " + std::to_string(version) + " is invalid");
  return version;
}

void migrate(Database& db) {
  if (check_schema(db) == kSchemaVersion) return;
  // Another process may be migrating too: take the write lock, then look again.
  Transaction tx(db, "migrating the schema");
  const int64_t version = check_schema(db);
  if (version == 0) db.exec("CREATE TABLE schema_version (version INTEGER NOT NULL)", "creating schema_version");
  for (int64_t v = version; v < kSchemaVersion; ++v)
    db.exec(kMigrations[size_t(v)], "migrating the schema to version " + std::to_string(v + 1));
  db.query("DELETE FROM schema_version", "writing the schema version").run();
  db.query("INSERT INTO schema_version (version) VALUES (?1)", "writing the schema version")
      .bind(1, kSchemaVersion)
      .run();
  tx.commit();
}

}  // namespace ls::store
