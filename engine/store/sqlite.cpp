#include "store/sqlite.h"

#include <sqlite3.h>

#include <cmath>
#include <limits>

#include "error.h"

namespace ls::store {

void Database::Close::operator()(sqlite3* db) const {
  sqlite3_close_v2(db);  // (v2: a connection with statements left becomes a zombie instead of failing)
}

void Database::Finalize::operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }

Database::Database(const std::filesystem::path& path, int busy_timeout_ms) : path_(path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  db_.reset(db);  // sqlite3_open_v2 returns a handle even on most failures; it must be closed
  if (rc != SQLITE_OK) {
    if (!db) throw Error(path.string() + ": cannot open the run store: out of memory");
    fail("cannot open the run store");
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_timeout_ms);
}

void Database::fail(std::string_view doing) const {
  std::string msg = path_.string() + ": " + std::string(doing) + ": ";
  msg += db_ ? sqlite3_errmsg(db_.get()) : "no connection";
  throw Error(msg);
}

void Database::exec(const char* sql, std::string_view doing) {
  if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(doing);
}

Query Database::query(const char* sql, std::string_view doing) const {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
      sqlite3_finalize(stmt);
      fail(doing);
    }
    it = statements_.emplace(sql, std::unique_ptr<sqlite3_stmt, Finalize>(stmt)).first;
  }
  return Query(*this, it->second.get(), doing);
}

int64_t Database::changes() const { return sqlite3_changes64(db_.get()); }

Query::Query(const Database& db, sqlite3_stmt* stmt, std::string_view doing)
    : db_(&db), stmt_(stmt), doing_(doing) {}

Query::~Query() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Query& Query::bind(int i, int64_t v) {
  if (sqlite3_bind_int64(stmt_, i, v) != SQLITE_OK) db_->fail(doing_);
  return *this;
}

Query& Query::bind(int i, double v) {
  if (sqlite3_bind_double(stmt_, i, v) != SQLITE_OK) db_->fail(doing_);
  return *this;
}

Query& Query::bind(int i, std::string_view v) {
  if (sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8) != SQLITE_OK)
    db_->fail(doing_);
  return *this;
}

Query& Query::bind(int i, std::nullptr_t) {
  if (sqlite3_bind_null(stmt_, i) != SQLITE_OK) db_->fail(doing_);
  return *this;
}

bool Query::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail(doing_);
}

void Query::run() {
  while (step()) {
  }
}

bool Query::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

int64_t Query::int64(int col) const { return sqlite3_column_int64(stmt_, col); }

double Query::real(int col) const {
  return is_null(col) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(stmt_, col);
}

std::optional<double> Query::optional_real(int col) const {
  if (is_null(col)) return std::nullopt;
  return sqlite3_column_double(stmt_, col);
}

std::optional<int64_t> Query::optional_int64(int col) const {
  if (is_null(col)) return std::nullopt;
  return sqlite3_column_int64(stmt_, col);
}

std::string Query::text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (!p) return {};
  return std::string(p, size_t(sqlite3_column_bytes(stmt_, col)));
}

std::optional<std::string> Query::optional_text(int col) const {
  if (is_null(col)) return std::nullopt;
  return text(col);
}

Transaction::Transaction(Database& db, std::string_view doing) : db_(db), doing_(doing) {
  db_.query("BEGIN IMMEDIATE", doing_).run();
}

Transaction::~Transaction() {
  if (done_) return;
  try {
    db_.query("ROLLBACK", doing_).run();
  } catch (const Error&) {
    // SQLite may already have rolled back on its own (e.g. after SQLITE_FULL); nothing left to undo.
  }
}

void Transaction::commit() {
  db_.query("COMMIT", doing_).run();
  done_ = true;
}

}  // namespace ls::store
