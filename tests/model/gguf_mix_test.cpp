// model/gguf_mix.h: the Q4_K_M types by the rule read from llama.cpp's llama-quant.cpp, on shapes of real
// models (gguf_llamacpp_quant_test checks the same against llama_model_quantize on small ones).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "model/gguf_mix.h"

namespace ls::model {
namespace {

using gguf::TensorType;

std::string type_name(TensorType t) { return gguf::type_traits(t).name; }

TEST(GgufMix, Q4KMOnQwen25HalfB) {
  // Qwen2.5-0.5B: 24 layers, hidden 896 (3.5 blocks of 256), MLP 4864 (19 blocks), tied embeddings.
  const GgufMixModel m{.layers = 24, .tied_embeddings = true};
  const auto type = [&](const std::string& name, uint64_t cols) {
    return type_name(gguf_matrix_type(GgufFileType::q4_k_m, name, cols, m));
  };
  EXPECT_EQ(type("token_embd.weight", 896), "q8_0");  // the output's rule, rows not whole 256-blocks
  EXPECT_EQ(type("blk.0.attn_q.weight", 896), "q5_0");
  // use_more_bits(i, 24): i < 3, i >= 21, (i - 3) % 3 == 2.
  std::string promoted;
  for (int i = 0; i < 24; ++i)
    if (type("blk." + std::to_string(i) + ".ffn_down.weight", 4864) == "q6_K") promoted += std::to_string(i) + " ";
  EXPECT_EQ(promoted, "0 1 2 5 8 11 14 17 20 21 22 23 ");
  EXPECT_EQ(type("blk.4.ffn_down.weight", 4864), "q4_K");
  EXPECT_EQ(type("blk.5.attn_v.weight", 896), "q8_0");  // q6_K, rows not whole blocks: q8_0
  EXPECT_EQ(type("blk.4.attn_v.weight", 896), "q5_0");  // q4_K → q5_0
  EXPECT_EQ(type("blk.4.ffn_up.weight", 896), "q5_0");
}

TEST(GgufMix, Q4KMOnLlama8B) {
  // Llama 3 8B: 32 layers, hidden 4096, MLP 14336, untied: use_more_bits(i, 32): i < 4, i >= 28, (i - 4) % 3 == 2.
  const GgufMixModel m{.layers = 32};
  const auto type = [&](const std::string& name, uint64_t cols) {
    return type_name(gguf_matrix_type(GgufFileType::q4_k_m, name, cols, m));
  };
  EXPECT_EQ(type("token_embd.weight", 4096), "q4_K");
  EXPECT_EQ(type("output.weight", 4096), "q6_K");
  std::string promoted;
  for (int i = 0; i < 32; ++i)
    if (type("blk." + std::to_string(i) + ".attn_v.weight", 4096) == "q6_K") promoted += std::to_string(i) + " ";
  EXPECT_EQ(promoted, "0 1 2 3 6 9 12 15 18 21 24 27 28 29 30 31 ");
  EXPECT_EQ(type("blk.7.attn_k.weight", 4096), "q4_K");
  EXPECT_EQ(type("blk.7.ffn_down.weight", 14336), "q4_K");
  EXPECT_EQ(type("blk.7.attn_v.weight", 4096), "q4_K");
  EXPECT_EQ(type_name(gguf_matrix_type(GgufFileType::q4_k_m, "blk.11.attn_v.weight", 8192,
                                       GgufMixModel{.layers = 80, .type_70b = true})), "q5_K");
}

// The type a matrix fell back from, for the export's note: none where its rows are whole blocks.
TEST(GgufMix, FallbackSaysWhichTypeItReplaced) {
  const GgufMixModel m{.layers = 24, .tied_embeddings = true};
  std::optional<TensorType> wanted;
  EXPECT_EQ(type_name(gguf_matrix_type(GgufFileType::q4_k_m, "blk.4.attn_q.weight", 896, m, &wanted)), "q5_0");
  ASSERT_TRUE(wanted.has_value());
  EXPECT_EQ(type_name(*wanted), "q4_K");
  EXPECT_EQ(type_name(gguf_matrix_type(GgufFileType::q4_k_m, "token_embd.weight", 896, m, &wanted)), "q8_0");
  ASSERT_TRUE(wanted.has_value());
  EXPECT_EQ(type_name(*wanted), "q6_K");
  EXPECT_EQ(type_name(gguf_matrix_type(GgufFileType::q4_k_m, "blk.4.ffn_down.weight", 4864, m, &wanted)), "q4_K");
  EXPECT_FALSE(wanted.has_value());
  EXPECT_EQ(type_name(gguf_matrix_type(GgufFileType::q8_0, "blk.0.attn_q.weight", 80, m, &wanted)), "f16");
  ASSERT_TRUE(wanted.has_value());
  EXPECT_EQ(type_name(*wanted), "q8_0");
  EXPECT_EQ(type_name(gguf_matrix_type(GgufFileType::f16, "blk.0.attn_q.weight", 80, m, &wanted)), "f16");
  EXPECT_FALSE(wanted.has_value());
}

TEST(GgufMix, OtherFileTypes) {
  const GgufMixModel m{.layers = 2};
  EXPECT_EQ(type_name(gguf_matrix_type(GgufFileType::q8_0, "blk.0.attn_q.weight", 64, m)), "q8_0");
  EXPECT_EQ(type_name(gguf_matrix_type(GgufFileType::q8_0, "blk.0.attn_q.weight", 80, m)), "f16");
  EXPECT_EQ(type_name(gguf_matrix_type(GgufFileType::q4_k_m, "blk.0.attn_q.weight", 80, m)), "f16");
  EXPECT_EQ(type_name(gguf_matrix_type(GgufFileType::bf16, "output.weight", 80, m)), "bf16");
  GgufFileType t;
  EXPECT_TRUE(parse_gguf_file_type("Q4_K_M", t));
  EXPECT_EQ(t, GgufFileType::q4_k_m);
  EXPECT_TRUE(parse_gguf_file_type("q8_0", t));
  EXPECT_EQ(t, GgufFileType::q8_0);
  EXPECT_FALSE(parse_gguf_file_type("q4_0", t));
  EXPECT_EQ(gguf_llama_ftype(GgufFileType::q4_k_m), 15u);
}

}  // namespace
}  // namespace ls::model
