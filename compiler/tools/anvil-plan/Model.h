//===- Model.h - anvil-plan's performance and memory model -------*- C++
//-*-===//
//
// Hardware (hardware.json), and the step-time and memory model of a
// parallel configuration, from the program facts of one layer and of the
// rest of the model (Program.h). docs/planner.md explains each term.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TOOLS_ANVIL_PLAN_MODEL_H
#define ANVIL_TOOLS_ANVIL_PLAN_MODEL_H

#include "Program.h"

#include "llvm/Support/JSON.h"

#include <map>
#include <optional>
#include <string>

namespace anvil::plan {

struct Link {
  double bytesPerSecond = 0; ///< Achieved bus bandwidth per GPU.
  double latency = 0;        ///< Seconds per ring step.
};

struct Hardware {
  std::string key, name;
  std::map<std::string, double> peak; ///< FLOP/s by precision (dense).
  double hbmBytes = 0, hbmBytesPerSecond = 0;
  int64_t nvlinkDomain = 8;
  Link nvlink, network;
  // Efficiencies (hardware.json's "efficiency").
  std::map<std::string, double> gemmFraction;
  double gemmTile = 128, launch = 4e-6;
  double attentionForward = 0.75, attentionBackward = 0.55,
         attentionBackwardFlops = 2.5;
  double hbmFraction = 0.92;
};

/// Reads `gpu` from the hardware file at `path`.
std::optional<Hardware> loadHardware(const std::string &path,
                                     const std::string &gpu,
                                     std::string &error);
/// The GPU names the file describes.
std::vector<std::string> hardwareNames(const std::string &path);

/// A parallel configuration of a training run.
struct Config {
  int64_t gpus = 0, tp = 1, pp = 1, vp = 1, cp = 1, dp = 1;
  int64_t microBatch = 1, globalBatch = 1, sequence = 0;
  std::string precision = "bf16"; ///< bf16 or fp8
  std::string recompute = "none"; ///< none, selective or full
};

/// Times of one micro-batch on one rank (seconds), from program facts.
struct PartTimes {
  double gemmForward = 0, gemmBackward = 0;
  double attentionForward = 0, attentionBackward = 0;
  double memoryForward = 0, memoryBackward = 0;
  double tpComm = 0;   ///< Tensor-parallel collectives, all of them.
  double tpHidden = 0; ///< Of which the GEMMs can hide.
  double cpComm = 0;   ///< Context-parallel key/value exchange.
  double parameters = 0, trainableParameters = 0, activationBytes = 0;
  double weightCopyBytes = 0; ///< FP8 copies of the weights.
  double fp8OnlyParameters = 0, fp8OnlyTrainable = 0; ///< Kept in FP8.
  double inputBytes = 0; ///< A layer's input (kept by full recomputation).
  PartTimes operator-(const PartTimes &o) const;
  PartTimes scaled(double s) const;
  double compute() const {
    return gemmForward + gemmBackward + attentionForward + attentionBackward +
           memoryForward + memoryBackward;
  }
};

/// Prices `facts` (one micro-batch, `cp`-way context parallelism) on `hw`.
PartTimes priceProgram(const ProgramFacts &facts, const Hardware &hw,
                       const Config &config, bool tpOverlap);

struct Breakdown {
  double compute = 0, tpExposed = 0, cpExposed = 0, bubble = 0, dpExposed = 0,
         optimizer = 0, recompute = 0;
};
struct Memory {
  double weights = 0, weightCopies = 0, gradients = 0, optimizer = 0,
         activations = 0;
  double total() const {
    return weights + weightCopies + gradients + optimizer + activations;
  }
};
struct Prediction {
  Config config;
  double stepTime = 0, mfu = 0, tokensPerSecond = 0;
  Breakdown breakdown;
  Memory memory;
  double dpComm = 0; ///< The whole data-parallel exchange (before overlap).
  int64_t microBatches = 0;
};

/// The step of `config` from one layer's and the rest's times, the model's
/// layers and its FLOPs per sequence.
Prediction predict(const Config &config, const Hardware &hw,
                   const PartTimes &layer, const PartTimes &rest,
                   const ModelShape &shape);

/// A collective of `bytes` over `ranks` on `link`: a ring all-gather or
/// reduce-scatter moves (n-1)/n of the bytes with n-1 latencies; an
/// all-reduce is the faster of a ring (twice that) and a double binary tree
/// (2 x bytes, 2 log2 n latencies), as NCCL chooses.
double ringTime(double bytes, int64_t ranks, const Link &link, bool allReduce);

/// The link between ranks `stride` apart in groups of `ranks`: NVLink
/// while the group fits in one NVLink domain, else the network.
const Link &linkFor(const Hardware &hw, int64_t stride, int64_t ranks);

llvm::json::Object toJson(const Prediction &p);

} // namespace anvil::plan

#endif // ANVIL_TOOLS_ANVIL_PLAN_MODEL_H
