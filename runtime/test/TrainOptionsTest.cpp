//===- TrainOptionsTest.cpp - tests of the executable's command line ------===//

#include "anvil/runtime/TrainOptions.h"

#include <gtest/gtest.h>

#include <vector>

using namespace anvil::rt;

static Expected<TrainOptions> parse(std::vector<const char *> args) {
  return parseTrainOptions(args);
}

TEST(TrainOptions, ParsesTheDocumentedCommandLine) {
  Expected<TrainOptions> o =
      parse({"--data", "d", "--steps", "40", "--seed=7", "--ckpt-dir", "ck",
             "--ckpt-every", "20", "--resume", "--eval-every", "10", "--log",
             "m.jsonl", "--threads", "1"});
  ASSERT_TRUE(o) << o.status().toString();
  EXPECT_EQ(o->data, "d");
  EXPECT_EQ(o->steps, 40);
  EXPECT_EQ(o->seed, 7u);
  EXPECT_EQ(o->ckptDir, "ck");
  EXPECT_EQ(o->ckptEvery, 20);
  EXPECT_TRUE(o->resume);
  EXPECT_EQ(o->evalEvery, 10);
  EXPECT_EQ(o->log, "m.jsonl");
  EXPECT_EQ(o->threads, 1);
  EXPECT_FALSE(o->help);
}

TEST(TrainOptions, Defaults) {
  Expected<TrainOptions> o = parse({});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->steps, 100);
  EXPECT_TRUE(o->data.empty());
  EXPECT_FALSE(o->resume);
  EXPECT_TRUE(parse({"--help"})->help);
  EXPECT_TRUE(parse({"--resume", "-h"})->help); // help wins over checks
}

TEST(TrainOptions, ErrorsNameTheOptionAndValue) {
  auto error = [](std::vector<const char *> args) {
    Expected<TrainOptions> o = parse(args);
    EXPECT_FALSE(o);
    return o ? "" : o.status().message();
  };
  EXPECT_EQ(error({"--steps", "abc"}),
            "--steps expects an integer >= 1, got 'abc'");
  EXPECT_EQ(error({"--steps", "0"}),
            "--steps expects an integer >= 1, got '0'");
  EXPECT_EQ(error({"--seed", "-1"}),
            "--seed expects an integer >= 0, got '-1'");
  EXPECT_EQ(error({"--steps"}), "--steps needs a value");
  EXPECT_EQ(error({"--resume=yes"}), "--resume takes no value");
  EXPECT_EQ(error({"--data="}), "--data needs a non-empty value");
  EXPECT_EQ(error({"--stpes", "3"}), "unknown option '--stpes' (see --help)");
  EXPECT_EQ(error({"--resume"}), "--resume needs --ckpt-dir");
  EXPECT_EQ(error({"--ckpt-every", "5"}), "--ckpt-every needs --ckpt-dir");
  EXPECT_EQ(error({"--threads", "100000"}),
            "--threads expects at most 4096 threads");
}

TEST(TrainOptions, UsageListsEveryOption) {
  std::string u = trainUsage("gpt.train");
  EXPECT_EQ(u.rfind("usage: gpt.train [options]", 0), 0u);
  for (const char *opt :
       {"--data", "--steps", "--seed", "--ckpt-dir", "--ckpt-every", "--resume",
        "--eval-every", "--eval-batches", "--log-every", "--log ", "--threads",
        "--help"})
    EXPECT_NE(u.find(opt), std::string::npos) << opt;
}
