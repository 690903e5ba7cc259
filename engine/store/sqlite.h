#pragma once
// A thin RAII layer over the SQLite C API for the run store: one connection, prepared statements cached by
// their SQL text, bind/step/column helpers, and short write transactions. Every failure throws ls::Error
// "<database file>: <what we were doing>: <SQLite's message>", so a locked, corrupt or foreign file is
// reported with its name and never crashes. Not thread-safe: one thread uses a Database at a time (other
// threads and processes open their own connection to the same file).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

struct sqlite3;
struct sqlite3_stmt;

namespace ls::store {

class Database;

// One use of a cached prepared statement: bind parameters (1-based), step through rows, read columns
// (0-based). Leaving scope resets the statement and clears its bindings for the next use. A statement is
// not re-entrant: do not start a second Query of the same SQL while one is alive.
class Query {
 public:
  Query(const Database& db, sqlite3_stmt* stmt, std::string_view doing);
  ~Query();
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& bind(int i, int64_t v);
  Query& bind(int i, int v) { return bind(i, int64_t(v)); }
  Query& bind(int i, double v);  // NaN is stored as NULL (SQLite's rule)
  Query& bind(int i, std::string_view v);
  Query& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Query& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Query& bind(int i, std::nullptr_t);  // NULL
  template <class T>
  Query& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind(i, nullptr);
  }

  // Advances to the next row: true when one is ready, false when done. Throws on error.
  bool step();
  // Steps to the end (a statement that returns no rows, or whose rows are ignored).
  void run();

  bool is_null(int col) const;
  int64_t int64(int col) const;
  double real(int col) const;  // NULL reads as NaN
  std::optional<double> optional_real(int col) const;
  std::optional<int64_t> optional_int64(int col) const;
  std::string text(int col) const;  // NULL reads as ""
  std::optional<std::string> optional_text(int col) const;

 private:
  const Database* db_;
  sqlite3_stmt* stmt_;
  std::string doing_;
};

class Database {
 public:
  // Opens `path` read-write, creating it when absent, with the busy timeout set and extended error codes.
  Database(const std::filesystem::path& path, int busy_timeout_ms);
  Database(Database&&) noexcept = default;
  Database& operator=(Database&&) noexcept = default;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more statements that return no rows (schema scripts, pragmas that set).
  void exec(const char* sql, std::string_view doing);
  // The cached statement for `sql` (prepared on first use). `doing` names the operation in errors.
  Query query(const char* sql, std::string_view doing) const;

  int64_t changes() const;  // rows changed by the latest INSERT/UPDATE/DELETE
  const std::filesystem::path& path() const { return path_; }

  // Throws ls::Error "<path>: <doing>: <SQLite's message for this connection>".
  [[noreturn]] void fail(std::string_view doing) const;

 private:
  struct Close {
    void operator()(sqlite3* db) const;
  };
  struct Finalize {
    void operator()(sqlite3_stmt* stmt) const;
  };

  std::filesystem::path path_;
  std::unique_ptr<sqlite3, Close> db_;
  // Declared after db_ so that statements are finalized before the connection closes.
  mutable std::unordered_map<std::string, std::unique_ptr<sqlite3_stmt, Finalize>> statements_;
};

// A write transaction: BEGIN IMMEDIATE takes the write lock at once (waiting up to the busy timeout), so
// two writers never deadlock upgrading a read lock. Rolled back unless commit() was called.
class Transaction {
 public:
  Transaction(Database& db, std::string_view doing);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  std::string doing_;
  bool done_ = false;
};

}  // namespace ls::store
