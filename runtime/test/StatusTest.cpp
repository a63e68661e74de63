//===- StatusTest.cpp - tests of Status and Expected ----------------------===//

#include "anvil/runtime/Status.h"

#include <gtest/gtest.h>

using namespace anvil::rt;

TEST(Status, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.isOk());
  EXPECT_EQ(s.toString(), "ok");
}

TEST(Status, ErrorCarriesCodeAndContext) {
  Status s = Status::error(ErrorCode::NotFound, "tensor 'wte.weight' missing")
                 .withContext("checkpoint 'ckpt/step_100.safetensors'");
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), ErrorCode::NotFound);
  EXPECT_EQ(s.toString(), "not found: checkpoint 'ckpt/step_100.safetensors': "
                          "tensor 'wte.weight' missing");
}

TEST(Status, WithContextKeepsOk) {
  EXPECT_TRUE(Status::ok().withContext("anything").isOk());
}

TEST(Expected, HoldsValueOrError) {
  Expected<int> v = 42;
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, 42);
  EXPECT_TRUE(v.status().isOk());

  Expected<int> e = Status::error(ErrorCode::InvalidArgument, "bad");
  EXPECT_FALSE(e);
  EXPECT_EQ(e.status().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(e.status().message(), "bad");
}
