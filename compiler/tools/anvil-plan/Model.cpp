//===- Model.cpp - anvil-plan's performance and memory model --------------===//
//
// Times come from the program's ops priced on the hardware's achieved rates
// (hardware.json); the parallel schedule (Megatron's interleaved 1F1B
// pipeline, the distributed optimizer) composes them. docs/planner.md
// walks through one example.
//
//===----------------------------------------------------------------------===//

#include "Model.h"

#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

namespace anvil::plan {

using llvm::json::Object;

namespace {

const Object *objectAt(const Object *o, llvm::StringRef key) {
  return o ? o->getObject(key) : nullptr;
}

double numberAt(const Object *o, llvm::StringRef key, double fallback) {
  if (!o)
    return fallback;
  std::optional<double> v = o->getNumber(key);
  return v ? *v : fallback;
}

std::optional<llvm::json::Value> readJson(const std::string &path,
                                          std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read the hardware file " + path + ": " +
            buffer.getError().message();
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    error = path + ": " + llvm::toString(json.takeError());
    return std::nullopt;
  }
  return std::move(*json);
}

} // namespace

std::vector<std::string> hardwareNames(const std::string &path) {
  std::string error;
  std::vector<std::string> names;
  std::optional<llvm::json::Value> json = readJson(path, error);
  if (!json || !json->getAsObject())
    return names;
  if (const Object *gpus = json->getAsObject()->getObject("gpus"))
    for (const auto &kv : *gpus)
      names.push_back(kv.first.str());
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<Hardware> loadHardware(const std::string &path,
                                     const std::string &gpu,
                                     std::string &error) {
  std::optional<llvm::json::Value> json = readJson(path, error);
  if (!json)
    return std::nullopt;
  const Object *root = json->getAsObject();
  const Object *g = objectAt(objectAt(root, "gpus"), gpu);
  if (!g) {
    error = "no GPU named '" + gpu + "' in " + path;
    return std::nullopt;
  }
  Hardware hw;
  hw.key = gpu;
  hw.name = g->getString("name").value_or(gpu).str();
  if (const Object *peak = g->getObject("peak_tflops"))
    for (const auto &kv : *peak)
      if (std::optional<double> v = kv.second.getAsNumber())
        hw.peak[kv.first.str()] = *v * 1e12;
  hw.hbmBytes = numberAt(g, "hbm_gb", 0) * 1e9;
  hw.hbmBytesPerSecond = numberAt(g, "hbm_tbps", 0) * 1e12;
  hw.nvlinkDomain = static_cast<int64_t>(numberAt(g, "nvlink_domain", 8));
  const Object *eff = objectAt(root, "efficiency");
  const Object *nv = objectAt(eff, "nvlink");
  const Object *net = objectAt(eff, "network");
  hw.nvlink = {numberAt(g, "nvlink_gbps", 0) * 1e9 *
                   numberAt(nv, "fraction", 1.0),
               numberAt(nv, "latency_us", 0) * 1e-6};
  hw.network = {numberAt(g, "network_gbps", 0) * 1e9 *
                    numberAt(net, "fraction", 1.0),
                numberAt(net, "latency_us", 0) * 1e-6};
  const Object *gemm = objectAt(eff, "gemm");
  for (const char *p : {"bf16", "fp8", "fp4"})
    hw.gemmFraction[p] = numberAt(gemm, p, 0.8);
  hw.gemmTile = numberAt(gemm, "tile", 128);
  hw.launch = numberAt(gemm, "launch_us", 4) * 1e-6;
  const Object *attention = objectAt(eff, "attention");
  hw.attentionForward = numberAt(attention, "forward", 0.75);
  hw.attentionBackward = numberAt(attention, "backward", 0.55);
  hw.attentionBackwardFlops = numberAt(attention, "backward_flops", 2.5);
  hw.hbmFraction = numberAt(objectAt(eff, "hbm"), "fraction", 0.92);
  if (!hw.peak.count("bf16") || hw.hbmBytes <= 0 || hw.hbmBytesPerSecond <= 0 ||
      hw.nvlink.bytesPerSecond <= 0 || hw.network.bytesPerSecond <= 0) {
    error = path + ": GPU '" + gpu +
            "' lacks a bf16 peak, HBM, NVLink or network figure";
    return std::nullopt;
  }
  return hw;
}

double ringTime(double bytes, int64_t ranks, const Link &link, bool allReduce) {
  if (ranks <= 1 || bytes <= 0)
    return 0;
  double n = static_cast<double>(ranks);
  double once =
      (n - 1) / n * bytes / link.bytesPerSecond + (n - 1) * link.latency;
  if (!allReduce)
    return once;
  // NCCL's all-reduce takes the faster of the ring (bandwidth-optimal,
  // 2 (n - 1) latencies) and the double binary tree (the whole message
  // twice through each rank's link, 2 log2 n latencies).
  double tree = 2 * (bytes / link.bytesPerSecond +
                     std::ceil(std::log2(n)) * link.latency);
  return std::min(2 * once, tree);
}

const Link &linkFor(const Hardware &hw, int64_t stride, int64_t ranks) {
  return stride * ranks <= hw.nvlinkDomain ? hw.nvlink : hw.network;
}

PartTimes PartTimes::operator-(const PartTimes &o) const {
  PartTimes d;
  d.gemmForward = gemmForward - o.gemmForward;
  d.gemmBackward = gemmBackward - o.gemmBackward;
  d.attentionForward = attentionForward - o.attentionForward;
  d.attentionBackward = attentionBackward - o.attentionBackward;
  d.memoryForward = memoryForward - o.memoryForward;
  d.memoryBackward = memoryBackward - o.memoryBackward;
  d.tpComm = tpComm - o.tpComm;
  d.tpHidden = tpHidden - o.tpHidden;
  d.cpComm = cpComm - o.cpComm;
  d.parameters = parameters - o.parameters;
  d.trainableParameters = trainableParameters - o.trainableParameters;
  d.activationBytes = activationBytes - o.activationBytes;
  d.weightCopyBytes = weightCopyBytes - o.weightCopyBytes;
  d.fp8OnlyParameters = fp8OnlyParameters - o.fp8OnlyParameters;
  d.fp8OnlyTrainable = fp8OnlyTrainable - o.fp8OnlyTrainable;
  d.inputBytes = inputBytes;
  return d;
}

PartTimes PartTimes::scaled(double s) const {
  PartTimes d = *this;
  for (double *v :
       {&d.gemmForward, &d.gemmBackward, &d.attentionForward,
        &d.attentionBackward, &d.memoryForward, &d.memoryBackward, &d.tpComm,
        &d.tpHidden, &d.cpComm, &d.parameters, &d.trainableParameters,
        &d.activationBytes, &d.weightCopyBytes, &d.fp8OnlyParameters,
        &d.fp8OnlyTrainable})
    *v *= s;
  return d;
}

PartTimes priceProgram(const ProgramFacts &facts, const Hardware &hw,
                       const Config &config, bool tpOverlap) {
  PartTimes t;
  double hbm = hw.hbmBytesPerSecond * hw.hbmFraction;
  auto peakOf = [&](const std::string &p) {
    auto it = hw.peak.find(p);
    return it == hw.peak.end() ? hw.peak.at("bf16") : it->second;
  };
  for (const Gemm &g : facts.gemms) {
    std::string p = g.fp8 && hw.peak.count("fp8") ? "fp8" : "bf16";
    double flops = 2 * g.m * g.n * g.k * g.batch;
    // Output tiles: a partial tile costs a whole one.
    double tile = hw.gemmTile;
    double used = (g.m * g.n) /
                  (std::ceil(g.m / tile) * tile * std::ceil(g.n / tile) * tile);
    double compute = flops / (peakOf(p) * hw.gemmFraction.at(p) * used);
    double operandBytes = p == "fp8" ? 1.0 : 2.0;
    double bytes =
        g.batch * ((g.m * g.k + g.k * g.n) * operandBytes + g.m * g.n * 2.0);
    double time = hw.launch + std::max(compute, bytes / hbm);
    (g.forward ? t.gemmForward : t.gemmBackward) += time;
  }
  // Fused attention in bf16: the local queries see every key under context
  // parallelism (load-balanced causal halves), so the program's local
  // FLOPs (built at sequence / cp) grow cp-fold.
  double attention = facts.attentionFlops * static_cast<double>(config.cp);
  double bf16 = peakOf("bf16");
  t.attentionForward = attention / (bf16 * hw.attentionForward);
  t.attentionBackward =
      attention * hw.attentionBackwardFlops / (bf16 * hw.attentionBackward);
  t.memoryForward = facts.forwardBytes / hbm;
  t.memoryBackward = facts.backwardBytes / hbm;
  const Link &tpLink = linkFor(hw, 1, config.tp);
  for (const Collective &c : facts.tpCollectives)
    t.tpComm +=
        ringTime(c.bytes, config.tp, tpLink, c.kind == Collective::AllReduce);
  // Overlapped with the GEMMs beside them (split in tp chunks, the first
  // chunk's exchange exposed), as far as the GEMMs last.
  if (tpOverlap && config.tp > 1) {
    double gemms = t.gemmForward + t.gemmBackward;
    double exposed = t.tpComm / static_cast<double>(config.tp) +
                     std::max(0.0, t.tpComm * (1 - 1.0 / config.tp) - gemms);
    t.tpHidden = t.tpComm - exposed;
  }
  // Context parallelism: each rank's keys and values go round the cp ring
  // in the forward pass, their gradients in the backward.
  if (config.cp > 1) {
    const Link &cpLink = linkFor(hw, config.tp, config.cp);
    double n = static_cast<double>(config.cp);
    t.cpComm = 2 * (facts.keyValueBytes * (n - 1) / cpLink.bytesPerSecond +
                    (n - 1) * cpLink.latency);
  }
  t.parameters = facts.parameters;
  t.trainableParameters = facts.trainableParameters;
  t.activationBytes = facts.activationBytes;
  t.inputBytes = facts.layerInputBytes;
  t.weightCopyBytes = facts.weightCopyBytes;
  t.fp8OnlyParameters = facts.fp8OnlyParameters;
  t.fp8OnlyTrainable = facts.fp8OnlyTrainable;
  return t;
}

Prediction predict(const Config &c, const Hardware &hw, const PartTimes &layer,
                   const PartTimes &rest, const ModelShape &shape) {
  Prediction p;
  p.config = c;
  double layersPerGpu =
      static_cast<double>(shape.layers) / static_cast<double>(c.pp);
  double m = static_cast<double>(c.globalBatch) /
             static_cast<double>(c.dp * c.microBatch);
  p.microBatches = static_cast<int64_t>(m);

  auto exposedCp = [](const PartTimes &t) {
    return std::max(0.0, t.cpComm - (t.attentionForward + t.attentionBackward));
  };
  double recompute = 0;
  if (c.recompute == "full")
    recompute =
        layer.gemmForward + layer.attentionForward + layer.memoryForward;
  else if (c.recompute == "selective")
    recompute = layer.attentionForward;
  // One micro-batch through this rank's layers, and the rest of the model
  // (embedding, head, loss) on the last stage, the slowest.
  double stageCompute = layersPerGpu * layer.compute() + rest.compute();
  double stageTp = layersPerGpu * (layer.tpComm - layer.tpHidden) +
                   (rest.tpComm - rest.tpHidden);
  double stageCp = layersPerGpu * exposedCp(layer);
  double stageRecompute = layersPerGpu * recompute;
  double stage = stageCompute + stageTp + stageCp + stageRecompute;

  Breakdown &b = p.breakdown;
  b.compute = m * stageCompute;
  b.tpExposed = m * stageTp;
  b.cpExposed = m * stageCp;
  b.recompute = m * stageRecompute;
  // Interleaved 1F1B: (pp - 1) / vp stages' worth of idle time.
  b.bubble = static_cast<double>(c.pp - 1) / static_cast<double>(c.vp) * stage;

  // Data parallelism with the distributed optimizer: gradients
  // reduce-scattered (bf16) and parameters all-gathered over the dp ranks,
  // bucket by bucket (a layer each) while the backward (forward) pass goes
  // on; the last bucket waits, and what the step's compute cannot cover.
  double trainable =
      layersPerGpu * layer.trainableParameters + rest.trainableParameters;
  double fp8Trainable =
      layersPerGpu * layer.fp8OnlyTrainable + rest.fp8OnlyTrainable;
  const Link &dpLink = linkFor(hw, c.tp * c.cp, c.dp);
  // Parameters kept in FP8 are gathered in FP8.
  p.dpComm = ringTime(trainable * 2, c.dp, dpLink, false) +
             ringTime((trainable - fp8Trainable) * 2 + fp8Trainable, c.dp,
                      dpLink, false);
  double buckets = std::max(1.0, layersPerGpu);
  b.dpExposed = p.dpComm / buckets +
                std::max(0.0, p.dpComm * (1 - 1 / buckets) - b.compute);
  // Adam on this rank's shard: f32 master, m, v and gradient read, the
  // three written, the bf16 parameter written (30 bytes per parameter).
  b.optimizer = trainable / static_cast<double>(c.dp) * 30.0 /
                (hw.hbmBytesPerSecond * hw.hbmFraction);

  p.stepTime = b.compute + b.tpExposed + b.cpExposed + b.recompute + b.bubble +
               b.dpExposed + b.optimizer;
  double tokens = static_cast<double>(c.globalBatch * c.sequence);
  p.tokensPerSecond = tokens / p.stepTime;
  auto peak = hw.peak.find(c.precision);
  double peakRate = peak == hw.peak.end() ? hw.peak.at("bf16") : peak->second;
  p.mfu = shape.flopsPerSequence * static_cast<double>(c.globalBatch) /
          (p.stepTime * static_cast<double>(c.gpus) * peakRate);

  // Memory of the first stage (the most micro-batches in flight) with the
  // rest of the model's parameters counted too (the embedding is there).
  double params = layersPerGpu * layer.parameters + rest.parameters;
  double fp8Only =
      layersPerGpu * layer.fp8OnlyParameters + rest.fp8OnlyParameters;
  Memory &mem = p.memory;
  mem.weights = (params - fp8Only) * 2;
  mem.weightCopies =
      layersPerGpu * layer.weightCopyBytes + rest.weightCopyBytes;
  mem.gradients = trainable * 4;
  mem.optimizer = trainable * 12 / static_cast<double>(c.dp);
  double perLayer =
      c.recompute == "full" ? layer.inputBytes : layer.activationBytes;
  double inFlight = 1;
  if (c.pp > 1)
    inFlight = std::min(m, static_cast<double>(c.pp) *
                               (1 + static_cast<double>(c.pp - 1) /
                                        static_cast<double>(c.pp * c.vp)));
  mem.activations = layersPerGpu * perLayer * inFlight + rest.activationBytes;
  return p;
}

Object toJson(const Prediction &p) {
  const Config &c = p.config;
  const Breakdown &b = p.breakdown;
  const Memory &m = p.memory;
  return Object{{"config", Object{{"gpus", c.gpus},
                                  {"tp", c.tp},
                                  {"pp", c.pp},
                                  {"vp", c.vp},
                                  {"cp", c.cp},
                                  {"dp", c.dp},
                                  {"mbs", c.microBatch},
                                  {"gbs", c.globalBatch},
                                  {"seq", c.sequence},
                                  {"precision", c.precision},
                                  {"recompute", c.recompute}}},
                {"step_time_s", p.stepTime},
                {"mfu", p.mfu},
                {"tokens_per_s", p.tokensPerSecond},
                {"micro_batches", p.microBatches},
                {"breakdown", Object{{"compute_s", b.compute},
                                     {"tp_exposed_s", b.tpExposed},
                                     {"cp_exposed_s", b.cpExposed},
                                     {"recompute_s", b.recompute},
                                     {"pipeline_bubble_s", b.bubble},
                                     {"dp_exposed_s", b.dpExposed},
                                     {"optimizer_s", b.optimizer},
                                     {"dp_communication_s", p.dpComm}}},
                {"memory_per_gpu_bytes", m.total()},
                {"memory", Object{{"weights", m.weights},
                                  {"gradients", m.gradients},
                                  {"weight_copies", m.weightCopies},
                                  {"optimizer_state", m.optimizer},
                                  {"activations", m.activations}}}};
}

} // namespace anvil::plan
