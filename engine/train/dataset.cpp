#include "train/dataset.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <numeric>
#include <system_error>
#include <thread>

#include "error.h"
#include "train/shuffle.h"

namespace ls::train {

namespace {

constexpr size_t kMaxListedBadLines = 100;  // the rest are counted in one more warning

struct FileExamples {
  std::vector<Example> examples;
  size_t skipped = 0, truncated = 0, longest = 0;
};

// Runs job(i) for i in [0, n) on `threads` threads (0: one per core, at most 8). job must not throw.
void parallel_for(size_t n, uint32_t threads, const std::function<void(size_t)>& job) {
  size_t count = threads ? threads : std::min(8u, std::max(1u, std::thread::hardware_concurrency()));
  count = std::min(count, n / 64 + 1);  // threads pay off from a few dozen examples each
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) job(i);
  };
  std::vector<std::jthread> pool;
  for (size_t t = 1; t < count; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {  // no more threads to be had: fewer do the same work
      break;
    }
  }
  work();
}

// Steps 1 and 2 of dataset.h for one file.
FileExamples encode_file(const std::filesystem::path& path, const tok::Tokenizer& tokenizer,
                         const tok::ChatTemplate& chat_template, const DatasetOptions& o, std::vector<std::string>& warnings) {
  // Bad lines are gathered from both stages; without skip_bad_lines the first of them throws.
  std::vector<LineError> bad;
  const auto records = read_jsonl(path, true, &bad);
  // Tokenizing is the slow part: the lines in parallel, the errors afterwards in line order.
  std::vector<Example> encoded(records.size());
  std::vector<std::string> errors(records.size());
  parallel_for(records.size(), o.threads, [&](size_t i) {
    try {
      encoded[i] = encode_example(records[i], tokenizer, chat_template, o.train_on_prompt);
    } catch (const std::exception& error) {
      errors[i] = path.string() + ":" + std::to_string(records[i].line) + ": " + error.what();
    }
  });
  FileExamples out;
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    const std::string where = path.string() + ":" + std::to_string(r.line);
    try {
      if (!errors[i].empty()) throw Error(errors[i]);
      Example& e = encoded[i];
      out.longest = std::max(out.longest, e.ids.size());
      const bool cut = e.ids.size() > o.max_seq_len;
      if (cut) {
        e.ids.resize(o.max_seq_len);
        e.trained.resize(o.max_seq_len);
      }
      if (trained_count(e) == 0) {
        if (cut)
          throw Error(where + ": no trained token left after cutting the example to max_seq_len " +
                      std::to_string(o.max_seq_len));
        throw Error(where + (r.kind == RecordKind::messages ? ": no trained token (the conversation has no assistant message)"
                                                            : ": no trained token"));
      }
      out.truncated += cut;
      out.examples.push_back(std::move(e));
    } catch (const Error& error) {
      bad.push_back({r.line, error.what()});
    }
  }
  std::sort(bad.begin(), bad.end(), [](const LineError& a, const LineError& b) { return a.line < b.line; });
  if (!bad.empty() && !o.skip_bad_lines) throw Error(bad[0].message);
  out.skipped = bad.size();
  for (size_t i = 0; i < bad.size() && i < kMaxListedBadLines; ++i) warnings.push_back("skipped " + bad[i].message);
  if (bad.size() > kMaxListedBadLines)
    warnings.push_back(path.string() + ": " + std::to_string(bad.size() - kMaxListedBadLines) + " more bad lines skipped");
  if (out.examples.empty())
    throw Error(path.string() + ": no usable example" +
                (bad.empty() ? std::string(" (the file has no non-blank line)")
                             : " (" + std::to_string(bad.size()) + " bad lines; the first: " + bad[0].message + ")"));
  if (out.truncated)
    warnings.push_back(path.string() + ": " + std::to_string(out.truncated) + " of " + std::to_string(out.examples.size()) +
                       " examples are longer than max_seq_len " + std::to_string(o.max_seq_len) +
                       " tokens and were cut at the end (the longest has " + std::to_string(out.longest) + ")");
  return out;
}

// Step 4 of dataset.h: whole examples appended to a row while it fits.
std::vector<Example> pack(std::vector<Example> examples, const std::vector<uint32_t>& order, uint32_t max_seq_len) {
  std::vector<Example> rows;
  for (uint32_t i : order) {
    Example& e = examples[i];
    if (rows.empty() || rows.back().ids.size() + e.ids.size() > max_seq_len) {
      rows.push_back(std::move(e));
      continue;
    }
    Example& row = rows.back();
    row.ids.insert(row.ids.end(), e.ids.begin(), e.ids.end());
    row.trained.insert(row.trained.end(), e.trained.begin(), e.trained.end());
  }
  return rows;
}

std::vector<uint32_t> identity(size_t n) {
  std::vector<uint32_t> p(n);
  std::iota(p.begin(), p.end(), 0u);
  return p;
}

}  // namespace

void validate(const DatasetOptions& o) {
  if (o.max_seq_len < 2) throw Error("dataset: max_seq_len must be at least 2, got " + std::to_string(o.max_seq_len));
  if (o.epochs < 1) throw Error("dataset: epochs must be at least 1");
  if (!(o.validation_fraction >= 0.0 && o.validation_fraction < 1.0))
    throw Error("dataset: validation_fraction must be in [0, 1), got " + std::to_string(o.validation_fraction));
  if (!o.validation_file.empty() && o.validation_fraction > 0.0)
    throw Error("dataset: set either validation_file or validation_fraction, not both");
}

size_t token_count(const std::vector<Example>& rows) {
  size_t n = 0;
  for (const auto& r : rows) n += r.ids.size();
  return n;
}

size_t trained_count(const std::vector<Example>& rows) {
  size_t n = 0;
  for (const auto& r : rows) n += trained_count(r);
  return n;
}

Dataset load_dataset(const std::filesystem::path& train_file, const tok::Tokenizer& tokenizer,
                     const tok::ChatTemplate& chat_template, const DatasetOptions& o) {
  validate(o);
  Dataset d;
  auto train = encode_file(train_file, tokenizer, chat_template, o, d.warnings);
  if (train.examples.size() > UINT32_MAX) throw Error(train_file.string() + ": more than 2^32 examples");
  d.skipped_lines = train.skipped;
  d.truncated = train.truncated;
  d.longest = train.longest;

  std::vector<Example> validation;
  if (!o.validation_file.empty()) {
    auto v = encode_file(o.validation_file, tokenizer, chat_template, o, d.warnings);
    d.skipped_lines += v.skipped;
    d.truncated += v.truncated;
    d.longest = std::max(d.longest, v.longest);
    validation = std::move(v.examples);
  } else if (o.validation_fraction > 0.0) {
    const size_t n = train.examples.size();
    if (n < 2)
      throw Error(train_file.string() + ": validation_fraction needs at least 2 examples, the file has " + std::to_string(n));
    // At least one example on each side.
    const size_t k = std::clamp<size_t>(size_t(std::llround(o.validation_fraction * double(n))), 1, n - 1);
    const auto p = permutation(uint32_t(n), derive_seed(o.seed, kStreamValidationSplit));
    std::vector<uint8_t> held_out(n, 0);
    for (size_t i = 0; i < k; ++i) held_out[p[i]] = 1;
    std::vector<Example> kept;
    for (size_t i = 0; i < n; ++i) (held_out[i] ? validation : kept).push_back(std::move(train.examples[i]));
    train.examples = std::move(kept);
  }
  d.train_examples = train.examples.size();
  d.validation_examples = validation.size();

  if (o.pack) {
    const auto order = o.shuffle ? permutation(uint32_t(d.train_examples), derive_seed(o.seed, kStreamPackOrder))
                                 : identity(d.train_examples);
    d.train = pack(std::move(train.examples), order, o.max_seq_len);
    d.validation = pack(std::move(validation), identity(d.validation_examples), o.max_seq_len);
  } else {
    d.train = std::move(train.examples);
    d.validation = std::move(validation);
  }
  return d;
}

}  // namespace ls::train
