//===- Metrics.cpp - progress lines and JSON Lines metrics ----------------===//

#include "anvil/runtime/Metrics.h"

#include "anvil/runtime/File.h"
#include "anvil/runtime/Json.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace anvil::rt {

std::string formatProgressLine(const StepMetrics &m) {
  char buf[256];
  int width =
      std::snprintf(nullptr, 0, "%lld", static_cast<long long>(m.totalSteps));
  int n = std::snprintf(
      buf, sizeof buf,
      "step %*lld/%lld | loss %.4f | lr %.2e | %.0f tok/s | %.1f ms/step | "
      "%.2f GFLOP/s",
      width, static_cast<long long>(m.step),
      static_cast<long long>(m.totalSteps), m.loss, m.lr, m.tokensPerSecond,
      m.msPerStep, m.gflops);
  std::string line(buf, static_cast<size_t>(std::max(n, 0)));
  if (m.evalLoss) {
    std::snprintf(buf, sizeof buf, " | eval loss %.4f", *m.evalLoss);
    line += buf;
  }
  return line;
}

/// JSON has no NaN or infinity: those become null.
static JsonValue number(double v) {
  return std::isfinite(v) ? JsonValue::number(v) : JsonValue();
}

std::string formatMetricsJson(const StepMetrics &m) {
  JsonValue o = JsonValue::object();
  o.set("step", JsonValue::number(static_cast<double>(m.step)));
  o.set("loss", number(m.loss));
  o.set("lr", number(m.lr));
  o.set("tokens_per_s", number(m.tokensPerSecond));
  o.set("ms_per_step", number(m.msPerStep));
  o.set("gflops", number(m.gflops));
  if (m.evalLoss)
    o.set("eval_loss", number(*m.evalLoss));
  if (m.deviceMsPerStep)
    o.set("device_ms_per_step", number(*m.deviceMsPerStep));
  return o.dump();
}

Expected<MetricsLog> MetricsLog::open(const std::string &path,
                                      std::optional<int64_t> resumeStep) {
  std::string kept;
  if (resumeStep) {
    Expected<std::vector<std::byte>> old = readFile(path);
    if (!old && old.status().code() != ErrorCode::NotFound)
      return old.status();
    if (old) {
      std::string text(reinterpret_cast<const char *>(old->data()),
                       old->size());
      size_t begin = 0, lineNo = 1;
      while (begin < text.size()) {
        size_t end = text.find('\n', begin);
        if (end == std::string::npos) // a record cut off by a crash
          break;
        std::string_view line(text.data() + begin, end - begin);
        Expected<JsonValue> record = parseJson(line);
        const JsonValue *step = record ? record->get("step") : nullptr;
        if (!step || !step->asInteger())
          return Status::error(ErrorCode::InvalidArgument,
                               "metrics log '" + path + "' line " +
                                   std::to_string(lineNo) +
                                   ": not a metrics record; move the file "
                                   "away or choose another --log");
        if (*step->asInteger() <= *resumeStep)
          kept.append(line).push_back('\n');
        begin = end + 1;
        ++lineNo;
      }
    }
    std::span<const std::byte> pieces[] = {std::as_bytes(std::span(kept))};
    if (Status s = writeFileAtomic(path, pieces); !s)
      return s;
  }
  std::FILE *f = std::fopen(path.c_str(), resumeStep ? "a" : "w");
  if (!f)
    return Status::error(ErrorCode::IOError, "cannot open metrics log '" +
                                                 path +
                                                 "': " + std::strerror(errno));
  return MetricsLog(path, f);
}

MetricsLog::MetricsLog(MetricsLog &&other) noexcept
    : path_(std::move(other.path_)), file_(other.file_) {
  other.file_ = nullptr;
}

MetricsLog::~MetricsLog() {
  if (file_)
    std::fclose(file_);
}

Status MetricsLog::write(const StepMetrics &m) {
  std::string line = formatMetricsJson(m) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fflush(file_) != 0)
    return Status::error(ErrorCode::IOError, "cannot write metrics log '" +
                                                 path_ +
                                                 "': " + std::strerror(errno));
  return Status::ok();
}

} // namespace anvil::rt
