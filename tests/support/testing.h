#pragma once
// Test support: one validated device per test process, random data that is never zero, outputs
// poisoned (every byte 0xFF: NaN for floats, -1 for ints) inside guard bands, and a comparison that
// prints the evidence (max abs/rel error, worst index, shape) when it fails.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "error.h"
#include "tensor/tensor.h"
#include "vk/device.h"
#include "vk/recorder.h"

namespace ls::test {

// Whether this build is instrumented by AddressSanitizer (the asan preset, scripts/test_asan.sh): its code runs
// several times slower, so wall-clock bounds meant for the optimized build are not checked there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitizedBuild = true;
#else
constexpr bool kSanitizedBuild = false;
#endif
#else
constexpr bool kSanitizedBuild = false;
#endif

// Whether tests run under the Khronos validation layer: always, unless LS_TEST_NO_VALIDATION=1, which is only
// for a GPU whose extensions the installed layer predates (Debian 12's 1.3.239 rejects
// VK_NV_cooperative_matrix2's structures on the H100). CI never sets it.
bool validation_wanted();

// The process's device, with the validation layer on. LORASTUDIO_DEVICE picks it as in the app.
vk::Device& device();

// Fails the current test if the validation layer spoke since the last call; prints what it said.
void expect_no_validation_messages();

// Each GPU test derives from this: it checks the validation layer stayed silent.
class GpuTest : public ::testing::Test {
 protected:
  void TearDown() override { expect_no_validation_messages(); }
  vk::Device& dev() { return device(); }
};

// Uniform in [-scale, scale] with |x| >= scale/64, from a fixed seed (never zero).
std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f);
// Uniform ints in [lo, hi].
std::vector<int32_t> random_ints(size_t n, uint32_t seed, int32_t lo, int32_t hi);
// Values as the GPU sees them after upload to `dtype` (rounded through it).
std::vector<float> rounded(std::span<const float> v, DType dtype);

// Makes a device tensor holding `values`.
Tensor tensor_from(vk::Device& dev, Shape shape, DType dtype, std::span<const float> values);
Tensor tensor_from_ints(vk::Device& dev, Shape shape, std::span<const int32_t> values);

// An output tensor filled with 0xFF bytes and surrounded by 256-byte guard bands (also 0xFF).
struct Poisoned {
  Tensor whole;   // guard + t + guard
  Tensor t;
  uint64_t guard_elems = 0;
  // Fails the test if a guard byte changed.
  void expect_guards_intact(const char* what) const;
};
Poisoned poisoned(vk::Device& dev, Shape shape, DType dtype);

// Records with `body`, finishes, runs once.
void run(vk::Device& dev, const std::function<void(vk::Recorder&)>& body);

// |actual - expected| <= rtol * (|expected| + mean|expected|) for every element, and no NaN.
// The mean term keeps elements near zero from demanding more than the data's own scale.
void expect_close(std::span<const float> actual, std::span<const float> expected, double rtol,
                  const std::string& what, const Shape& shape = {});

// Expects fn to throw ls::Error whose message contains `what` (e.g. the op's name).
void expect_error_naming(const std::function<void()>& fn, const std::string& what);

// Absolute and relative (by max |expected|) error between two vectors, for reports.
struct ErrorStats {
  double max_abs = 0, max_rel = 0;
  size_t worst = 0;
};
ErrorStats compare(std::span<const float> actual, std::span<const float> expected);

}  // namespace ls::test
