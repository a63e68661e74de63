//===- Metrics.h - progress lines and JSON Lines metrics ----------*- C++
//-*-===//
//
// The training loop reports every K steps: a human line on stdout
//
//   step   20/40 | loss 2.3451 | lr 1.00e-03 | 12345 tok/s | 45.2 ms/step
//   | 3.21 GFLOP/s
//
// and, with --log FILE, one JSON object per report:
//
//   {"step":20,"loss":2.3451,"lr":0.001,"tokens_per_s":12345,
//    "ms_per_step":45.2,"gflops":3.21}
//
// A resumed run reopens the log keeping only the records up to the step it
// resumes from, so the file reads as one uninterrupted run.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_METRICS_H
#define ANVIL_RUNTIME_METRICS_H

#include "anvil/runtime/Status.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace anvil::rt {

struct StepMetrics {
  int64_t step = 0;       ///< Steps completed.
  int64_t totalSteps = 0; ///< The run's --steps.
  double loss = 0;
  double lr = 0;
  double tokensPerSecond = 0;
  double msPerStep = 0;
  double gflops = 0;              ///< Achieved GFLOP/s.
  std::optional<double> evalLoss; ///< When an evaluation ran.
  /// The device's time a step (its events: anvil_rt_device_step_seconds),
  /// where it has one.
  std::optional<double> deviceMsPerStep;
};

/// The progress line (no trailing newline).
std::string formatProgressLine(const StepMetrics &m);

/// The JSON object of one record (no trailing newline).
std::string formatMetricsJson(const StepMetrics &m);

/// A JSON Lines metrics file, flushed after every record.
class MetricsLog {
public:
  /// Opens `path` for a fresh run (truncating it) or, with `resumeStep`,
  /// keeps the records with "step" <= *resumeStep and appends after them.
  static Expected<MetricsLog> open(const std::string &path,
                                   std::optional<int64_t> resumeStep);

  MetricsLog(MetricsLog &&other) noexcept;
  MetricsLog &operator=(MetricsLog &&) = delete;
  MetricsLog(const MetricsLog &) = delete;
  ~MetricsLog();

  Status write(const StepMetrics &m);

private:
  MetricsLog(std::string path, std::FILE *file)
      : path_(std::move(path)), file_(file) {}
  std::string path_;
  std::FILE *file_ = nullptr;
};

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_METRICS_H
