//===- DTypeTest.cpp - tests of the runtime's element types ---------------===//

#include "anvil/runtime/DType.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

using namespace anvil::rt;

TEST(DType, SizesMatchStorage) {
  EXPECT_EQ(dtypeSize(DType::F64), 8u);
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::F8E4M3FN), 1u);
  EXPECT_EQ(dtypeSize(DType::F8E5M2), 1u);
  EXPECT_EQ(dtypeSize(DType::I1), 1u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_TRUE(isFloat(DType::BF16));
  EXPECT_FALSE(isFloat(DType::I32));
}

TEST(DType, BothSpellingsRoundTrip) {
  for (DType t :
       {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3FN,
        DType::F8E5M2, DType::I1, DType::I32, DType::I64}) {
    Expected<DType> fromMlir = parseDType(dtypeName(t));
    Expected<DType> fromSafetensors = parseDType(dtypeSafetensorsName(t));
    ASSERT_TRUE(fromMlir) << dtypeName(t);
    ASSERT_TRUE(fromSafetensors) << dtypeSafetensorsName(t);
    EXPECT_EQ(*fromMlir, t);
    EXPECT_EQ(*fromSafetensors, t);
  }
}

TEST(DType, UnknownNameListsAlternatives) {
  Expected<DType> t = parseDType("float32");
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("'float32'"), std::string::npos);
  EXPECT_NE(t.status().message().find("bf16/BF16"), std::string::npos);
}

TEST(DType, NumElements) {
  std::vector<int64_t> gpt2Wte{50257, 768};
  EXPECT_EQ(*numElements(gpt2Wte), 50257 * 768);
  EXPECT_EQ(*numElements(std::vector<int64_t>{}), 1);
  EXPECT_FALSE(numElements(std::vector<int64_t>{4, -1}));
  int64_t big = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_FALSE(numElements(std::vector<int64_t>{big, 3}));
}
