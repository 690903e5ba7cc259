// The Model and Chat panels' model (ui/loading.h): opened as stored, or with its projection weights packed
// (the Train panel's "Base weights"), and what the Model panel shows of each: the parameter count (the same),
// the weights' format and their bytes on the GPU (less when packed); a quantized model generates.
#include "ui/loading.h"

#include "infer/generator.h"
#include "support/testing.h"

namespace ls::ui {
namespace {

namespace fs = std::filesystem;

TEST(Loading, ModelOpensQuantizedForChat) {
  const fs::path dir = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/llama_tiny";
  const auto plain = load_model(test::device(), dir);
  const auto nf4 = load_model(test::device(), dir, QuantType::nf4);
  const auto q8 = load_model(test::device(), dir, QuantType::q8);
  EXPECT_EQ(plain->dtype, "f32");
  EXPECT_EQ(nf4->dtype, "nf4");
  EXPECT_EQ(q8->dtype, "q8");
  EXPECT_EQ(nf4->parameters, plain->parameters);
  EXPECT_LT(nf4->weight_bytes, q8->weight_bytes);
  EXPECT_LT(q8->weight_bytes, plain->weight_bytes);
  EXPECT_EQ(plain->weight_bytes, plain->model.weights.device_bytes());
  infer::Generator g(test::device(), nf4->model, nullptr, {.context = 16});
  const std::vector<int32_t> ids = {1, 2, 3, 4, 5};
  g.prefill(ids);
  g.decode(6);
  for (float v : g.logits()) ASSERT_TRUE(std::isfinite(v));
  test::expect_no_validation_messages();
}

}  // namespace
}  // namespace ls::ui
