#include "support/testing.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>

namespace ls::test {

namespace {
std::mutex g_messages_mutex;
std::vector<std::string> g_messages;
}  // namespace

bool validation_wanted() {
  const char* off = std::getenv("LS_TEST_NO_VALIDATION");
  return !(off && std::string(off) == "1");
}

vk::Device& device() {
  static std::unique_ptr<vk::Device> dev = [] {
    vk::DeviceOptions opts;
    opts.validation = validation_wanted();
    opts.on_validation_message = [](const std::string& m) {
      std::lock_guard lock(g_messages_mutex);
      g_messages.push_back(m);
    };
    return std::make_unique<vk::Device>(opts);
  }();
  return *dev;
}

void expect_no_validation_messages() {
  std::lock_guard lock(g_messages_mutex);
  for (const auto& m : g_messages) ADD_FAILURE() << "Vulkan validation message: " << m;
  g_messages.clear();
}

std::vector<float> random_values(size_t n, uint32_t seed, float scale) {
  std::mt19937 gen(seed * 2654435761u + 12345u);
  std::uniform_real_distribution<float> mag(scale / 64.0f, scale);
  std::bernoulli_distribution sign(0.5);
  std::vector<float> v(n);
  for (auto& x : v) x = sign(gen) ? mag(gen) : -mag(gen);
  return v;
}

std::vector<int32_t> random_ints(size_t n, uint32_t seed, int32_t lo, int32_t hi) {
  std::mt19937 gen(seed * 2246822519u + 7u);
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

std::vector<float> rounded(std::span<const float> v, DType dtype) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = round_to(dtype, v[i]);
  return out;
}

Tensor tensor_from(vk::Device& dev, Shape shape, DType dtype, std::span<const float> values) {
  Tensor t = Tensor::empty(dev, std::move(shape), dtype, "test input");
  upload(t, values);
  return t;
}

Tensor tensor_from_ints(vk::Device& dev, Shape shape, std::span<const int32_t> values) {
  Tensor t = Tensor::empty(dev, std::move(shape), DType::i32, "test input");
  upload(t, values);
  return t;
}

Poisoned poisoned(vk::Device& dev, Shape shape, DType dtype) {
  Poisoned p;
  p.guard_elems = 256 / dtype_size(dtype);
  uint64_t n = 1;
  for (auto d : shape) n *= d;
  p.whole = Tensor::empty(dev, {uint32_t(n + 2 * p.guard_elems), 1}, dtype, "poisoned test output");
  upload_bytes(p.whole, std::vector<uint8_t>(p.whole.bytes(), 0xFF));
  p.t = p.whole.slice_rows(p.guard_elems, p.guard_elems + n).reshape(std::move(shape));
  return p;
}

void Poisoned::expect_guards_intact(const char* what) const {
  auto bytes = download_bytes(whole);
  size_t g = guard_elems * dtype_size(whole.dtype());
  size_t touched = 0;
  for (size_t i = 0; i < g; ++i) touched += bytes[i] != 0xFF;
  for (size_t i = bytes.size() - g; i < bytes.size(); ++i) touched += bytes[i] != 0xFF;
  EXPECT_EQ(touched, 0u) << what << ": " << touched << " guard bytes around the output were overwritten";
}

void run(vk::Device& dev, const std::function<void(vk::Recorder&)>& body) {
  vk::Recorder rec(dev);
  body(rec);
  rec.finish().run();
}

ErrorStats compare(std::span<const float> actual, std::span<const float> expected) {
  ErrorStats s;
  double scale = 0;
  for (float e : expected) scale = std::max(scale, double(std::fabs(e)));
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    double d = std::fabs(double(actual[i]) - double(expected[i]));
    if (std::isnan(actual[i])) d = INFINITY;
    if (d > s.max_abs) { s.max_abs = d; s.worst = i; }
  }
  s.max_rel = scale > 0 ? s.max_abs / scale : s.max_abs;
  return s;
}

void expect_close(std::span<const float> actual, std::span<const float> expected, double rtol, const std::string& what,
                  const Shape& shape) {
  ASSERT_EQ(actual.size(), expected.size()) << what << ": sizes differ";
  double mean = 0;
  for (float e : expected) mean += std::fabs(e);
  mean = expected.empty() ? 0 : mean / double(expected.size());
  size_t bad = 0, first_bad = 0, nans = 0;
  double worst_ratio = 0;
  size_t worst = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = actual[i], e = expected[i];
    double allowed = rtol * (std::fabs(e) + mean);
    double d = std::fabs(a - e);
    if (std::isnan(a) != std::isnan(e)) { ++nans; d = INFINITY; }
    else if (std::isnan(a)) d = 0;
    double ratio = allowed > 0 ? d / allowed : (d > 0 ? INFINITY : 0);
    if (ratio > worst_ratio) { worst_ratio = ratio; worst = i; }
    if (d > allowed) {
      if (!bad) first_bad = i;
      ++bad;
    }
  }
  if (bad) {
    ErrorStats s = compare(actual, expected);
    std::ostringstream o;
    o << what << " " << shape_string(shape) << ": " << bad << " of " << actual.size() << " elements off (" << nans
      << " NaN/unwritten), rtol " << rtol << "; max abs err " << s.max_abs << ", max rel err (to max |expected|) "
      << s.max_rel << "; worst at " << worst << ": got " << actual[worst] << ", want " << expected[worst]
      << "; first bad at " << first_bad << ": got " << actual[first_bad] << ", want " << expected[first_bad];
    ADD_FAILURE() << o.str();
  }
}

void expect_error_naming(const std::function<void()>& fn, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << "expected ls::Error naming " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

}  // namespace ls::test
