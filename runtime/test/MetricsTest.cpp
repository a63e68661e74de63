//===- MetricsTest.cpp - tests of progress lines and metrics logs ---------===//

#include "anvil/runtime/Metrics.h"
#include "anvil/runtime/File.h"
#include "anvil/runtime/Json.h"

#include "TempDirTest.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace anvil::rt;

namespace {
class MetricsTest : public test::TempDirTest {
protected:
  std::string contents(const std::string &p) {
    Expected<std::vector<std::byte>> b = readFile(p);
    EXPECT_TRUE(b) << b.status().toString();
    return b ? std::string(reinterpret_cast<const char *>(b->data()), b->size())
             : "";
  }
  StepMetrics at(int64_t step) {
    StepMetrics m;
    m.step = step;
    m.totalSteps = 40;
    m.loss = 2.5 - 0.01 * static_cast<double>(step);
    m.lr = 1e-3;
    m.tokensPerSecond = 12345.4;
    m.msPerStep = 45.25;
    m.gflops = 3.2149;
    return m;
  }
};
} // namespace

TEST_F(MetricsTest, ProgressLine) {
  EXPECT_EQ(formatProgressLine(at(5)),
            "step  5/40 | loss 2.4500 | lr 1.00e-03 | 12345 tok/s | 45.2 "
            "ms/step | 3.21 GFLOP/s");
  StepMetrics m = at(40);
  m.evalLoss = 2.0;
  EXPECT_EQ(formatProgressLine(m).substr(0, 8), "step 40/");
  EXPECT_NE(formatProgressLine(m).find("| eval loss 2.0000"),
            std::string::npos);
}

TEST_F(MetricsTest, JsonRecordsParseBack) {
  StepMetrics m = at(10);
  m.gflops = NAN;
  Expected<JsonValue> v = parseJson(formatMetricsJson(m));
  ASSERT_TRUE(v) << formatMetricsJson(m);
  EXPECT_EQ(*v->get("step")->asInteger(), 10);
  EXPECT_EQ(v->get("loss")->asNumber(), 2.4);
  EXPECT_EQ(v->get("gflops")->kind(), JsonValue::Kind::Null);
  EXPECT_EQ(v->get("eval_loss"), nullptr);
}

TEST_F(MetricsTest, ResumeKeepsRecordsUpToTheResumedStep) {
  std::string p = path("m.jsonl");
  {
    Expected<MetricsLog> log = MetricsLog::open(p, std::nullopt);
    ASSERT_TRUE(log);
    for (int64_t s : {10, 20, 30})
      ASSERT_TRUE(log->write(at(s)));
  }
  // A crash cut the last record short.
  std::string text = contents(p) + "{\"step\":4";
  std::span<const std::byte> pieces[] = {std::as_bytes(std::span(text))};
  ASSERT_TRUE(writeFileAtomic(p, pieces));
  {
    Expected<MetricsLog> log = MetricsLog::open(p, 20);
    ASSERT_TRUE(log) << log.status().toString();
    ASSERT_TRUE(log->write(at(30)));
  }
  std::string want = formatMetricsJson(at(10)) + "\n" +
                     formatMetricsJson(at(20)) + "\n" +
                     formatMetricsJson(at(30)) + "\n";
  EXPECT_EQ(contents(p), want);
  // A fresh run truncates.
  { ASSERT_TRUE(MetricsLog::open(p, std::nullopt)); }
  EXPECT_EQ(contents(p), "");
}

TEST_F(MetricsTest, ResumeRefusesAFileThatIsNotAMetricsLog) {
  std::string p = path("notes.txt");
  std::string text = "my notes\nplease keep\n";
  std::span<const std::byte> pieces[] = {std::as_bytes(std::span(text))};
  ASSERT_TRUE(writeFileAtomic(p, pieces));
  Expected<MetricsLog> log = MetricsLog::open(p, 20);
  ASSERT_FALSE(log);
  EXPECT_EQ(log.status().message(),
            "metrics log '" + p +
                "' line 1: not a metrics record; move the file away or "
                "choose another --log");
  EXPECT_EQ(contents(p), text); // untouched
}
