//===- Trainer.cpp - the training loop of a compiled executable -----------===//
//
// 1. Read the embedded manifest and the options.
// 2. Allocate every buffer (64-byte aligned); state that a step updates
//    gets two generations that swap after each step.
// 3. Initialize the state from --seed, or load it from the newest
//    checkpoint with --resume (the step and data position come with it).
// 4. Each step: fill the inputs for batch number `step` (token shards,
//    synthetic tokens or a fixed --batch-dir batch), call train_step, swap
//    the generations, report, evaluate and checkpoint on schedule.
// 5. At the end, checkpoint and say where the checkpoint and the metrics
//    went.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Trainer.h"

#include "anvil/runtime/Checkpoint.h"
#include "anvil/runtime/Dist.h"
#include "anvil/runtime/Init.h"
#include "anvil/runtime/Manifest.h"
#include "anvil/runtime/Metrics.h"
#include "anvil/runtime/Npy.h"
#include "anvil/runtime/RuntimeABI.h"
#include "anvil/runtime/TokenData.h"
#include "anvil/runtime/TrainOptions.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace anvil::rt {
namespace {

/// A 64-byte aligned, zero-initialized allocation.
class Storage {
public:
  /// A buffer the host reads and writes too.
  static Expected<Storage> allocate(size_t bytes) {
    size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    // The device's memory (RuntimeABI.h): host memory on the CPU.
    void *p = anvil_rt_buffer_alloc(64, rounded);
    if (p)
      std::memset(p, 0, rounded);
    return adopt(p, bytes, anvil_rt_buffer_free);
  }
  /// The memory plan's arena, which only the device touches.
  static Expected<Storage> allocateWorkspace(size_t bytes) {
    return adopt(anvil_rt_workspace_alloc(bytes), bytes,
                 anvil_rt_workspace_free);
  }
  std::byte *data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<std::byte> bytes() const { return {data_.get(), size_}; }

private:
  using Free = void (*)(void *);
  static Expected<Storage> adopt(void *p, size_t bytes, Free free) {
    if (!p)
      return Status::error(ErrorCode::OutOfMemory, "cannot allocate " +
                                                       std::to_string(bytes) +
                                                       " bytes");
    Storage s;
    s.data_ =
        std::unique_ptr<std::byte, Free>(static_cast<std::byte *>(p), free);
    s.size_ = bytes;
    return s;
  }
  std::unique_ptr<std::byte, Free> data_{nullptr, nullptr};
  size_t size_ = 0;
};

/// One manifest buffer: its current generation and, for updated state, the
/// next one.
struct Slot {
  const BufferInfo *info = nullptr;
  Storage current;
  std::optional<Storage> next;
};

Status error(const std::string &message) {
  return Status::error(ErrorCode::InvalidArgument, message);
}

/// Reads DIR/NAME.npy into `slot`, which must match its dtype and shape.
/// Rank `rank` of `ranks` data-parallel ranks reads the whole batch (ranks
/// times the slot's rows) and keeps its share, rows [rank b, (rank + 1) b).
Status readInput(const std::string &dir, Slot &slot, int64_t rank = 0,
                 int64_t ranks = 1) {
  const TensorSpec &spec = slot.info->spec;
  std::string path = dir + "/" + spec.name + ".npy";
  Expected<NpyArray> a = readNpy(path);
  if (!a)
    return a.status();
  std::vector<int64_t> whole = spec.shape;
  if (ranks > 1 && !whole.empty())
    whole[0] *= ranks;
  if (a->dtype != spec.dtype || a->shape != whole)
    return error(
        "'" + path + "' holds " + std::string(dtypeName(a->dtype)) +
        formatShape(a->shape) + ", the model's '" + spec.name + "' is " +
        std::string(dtypeName(spec.dtype)) + formatShape(whole) +
        (ranks > 1 ? " (the whole batch of " + std::to_string(ranks) + " ranks)"
                   : std::string()));
  if (ranks > 1 && !whole.empty()) {
    // This rank's rows, contiguous in C order.
    size_t share = slot.current.size();
    a->data.erase(a->data.begin(),
                  a->data.begin() + static_cast<std::ptrdiff_t>(
                                        share * static_cast<size_t>(rank)));
    a->data.resize(share);
  }
  if (slot.info->range) {
    // Values outside [0, range) would index past a table or a class.
    int64_t range = *slot.info->range;
    const std::byte *p = a->data.data();
    size_t n = a->data.size() / dtypeSize(spec.dtype);
    for (size_t i = 0; i < n; ++i) {
      double v = 0;
      switch (spec.dtype) {
      case DType::I32: {
        int32_t x;
        std::memcpy(&x, p + 4 * i, 4);
        v = x;
        break;
      }
      case DType::I64: {
        int64_t x;
        std::memcpy(&x, p + 8 * i, 8);
        v = static_cast<double>(x);
        break;
      }
      case DType::F32: {
        float x;
        std::memcpy(&x, p + 4 * i, 4);
        v = x;
        break;
      }
      default:
        continue;
      }
      std::optional<int64_t> ignore = slot.info->ignore;
      if (ignore && v == static_cast<double>(*ignore))
        continue;
      if (!(v >= 0 && v < static_cast<double>(range)) || v != std::floor(v))
        return error("'" + path + "' holds " + std::to_string(v) +
                     " at flat index " + std::to_string(i) + "; '" + spec.name +
                     "' takes whole numbers in [0, " + std::to_string(range) +
                     ")" +
                     (ignore ? " or " + std::to_string(*ignore) + " (ignored)"
                             : std::string()));
    }
  }
  std::memcpy(slot.current.data(), a->data.data(), slot.current.size());
  return Status::ok();
}

/// Stores int32 token ids into an i32 or i64 buffer.
void storeTokens(const std::vector<int32_t> &ids, Slot &slot) {
  if (slot.info->spec.dtype == DType::I32) {
    std::memcpy(slot.current.data(), ids.data(), ids.size() * 4);
    return;
  }
  auto *out = reinterpret_cast<int64_t *>(slot.current.data());
  for (size_t i = 0; i < ids.size(); ++i)
    out[i] = ids[i];
}

double readScalar(const Slot &slot) {
  switch (slot.info->spec.dtype) {
  case DType::F32: {
    float v;
    std::memcpy(&v, slot.current.data(), 4);
    return v;
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, slot.current.data(), 8);
    return v;
  }
  default:
    return NAN;
  }
}

class Trainer {
public:
  Trainer(Manifest manifest, TrainOptions options, std::string program)
      : m_(std::move(manifest)), o_(std::move(options)),
        program_(std::move(program)) {}

  Status setUp();
  Status run();
  Status evalOnce();
  /// Ends every rank (after an error on this one); nothing without ranks.
  void abortWorld(int code) {
    if (comm_)
      comm_->abort(code);
  }

private:
  Slot *slot(const std::string &name);
  Status fillBatch(uint64_t position, bool validation);
  Expected<double> evaluate();
  Status checkpoint(int64_t step);
  Status initState(int64_t numArgs);
  Status resume(int64_t &step);
  PieceLayout layoutOf(const BufferInfo &b) const;
  bool writesPiece(const BufferInfo &b) const;

  Manifest m_;
  TrainOptions o_;
  std::string program_;
  std::vector<Slot> slots_;
  std::vector<Storage> evalResults_;
  Storage workspace_;        ///< The static memory plan's arena.
  int64_t measuredPeak_ = 0; ///< Workspace + what steps allocated besides.
  /// The most device memory in use after a step (-1: no device).
  int64_t deviceUsed_ = -1;
  Slot *tokens_ = nullptr, *targets_ = nullptr, *dropoutSeed_ = nullptr;
  std::optional<TokenDataset> train_, val_;
  int64_t tokensPerStep_ = 0;
  bool batchLoaded_ = false;
  WorldInfo world_;
  MeshLayout mesh_;          ///< The program's mesh (no axes: one process).
  int64_t dataParallel_ = 1; ///< Ranks of mesh axis dp,
  int64_t dpRank_ = 0;       ///< and this rank's position on it.
  std::vector<int64_t> coordinates_;   ///< This rank's, one per mesh axis.
  std::unique_ptr<Communicator> comm_; ///< The world.
  /// One per mesh axis (destroyed before the world's).
  std::vector<std::unique_ptr<Communicator>> axes_;
};

Slot *Trainer::slot(const std::string &name) {
  for (Slot &s : slots_)
    if (s.info->spec.name == name)
      return &s;
  return nullptr;
}

Status Trainer::setUp() {
  // The device (a GPU in CUDA executables) before any buffer exists.
  if (const char *why = anvil_rt_device_open())
    return Status::error(ErrorCode::Unavailable, why);
  // The world the launcher started, against the mesh compiled in.
  Expected<WorldInfo> world = worldFromEnvironment();
  if (!world)
    return world.status();
  world_ = *world;
  mesh_.axes = m_.mesh;
  dataParallel_ = m_.meshAxis("dp");
  const int64_t ranks = mesh_.size();
  std::string meshText;
  for (const auto &[axis, n] : mesh_.axes)
    meshText += (meshText.empty() ? "" : ",") + axis + "=" + std::to_string(n);
  if (world_.size != ranks)
    return error(
        "this program was compiled for " + std::to_string(ranks) +
        (ranks == 1 ? " process" : " ranks (--mesh " + meshText + ")") +
        ", but " +
        (world_.size == 1 ? std::string("it runs as a single process")
                          : world_.launcher + " started " +
                                std::to_string(world_.size) + " ranks") +
        (ranks > 1 ? "; start it with anvil-run -n " + std::to_string(ranks) +
                         ", mpirun -n or srun -n"
                   : ""));
  coordinates_ = mesh_.coordinates(world_.rank);
  for (size_t a = 0; a < mesh_.axes.size(); ++a)
    if (mesh_.axes[a].first == "dp")
      dpRank_ = coordinates_[a];
  if (ranks > 1) {
    Expected<std::unique_ptr<Communicator>> comm =
        makeWorldCommunicator(world_);
    if (!comm)
      return comm.status();
    comm_ = std::move(*comm);
    Expected<std::vector<std::unique_ptr<Communicator>>> axes =
        splitMesh(*comm_, mesh_);
    if (!axes)
      return axes.status();
    axes_ = std::move(*axes);
    // The device's transport for generated code's collectives (NCCL in a
    // CUDA executable).
    for (std::unique_ptr<Communicator> &axis : axes_)
      axis = deviceAxisCommunicator(std::move(axis));
    std::vector<Communicator *> forCode;
    for (const auto &c : axes_)
      forCode.push_back(c.get());
    setMeshCommunicators(std::move(forCode));
    // One core's share per rank unless --threads says otherwise (the ranks
    // of a machine would otherwise each start a thread per core).
    if (o_.threads == 0) {
      unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      anvil_rt_set_num_threads(static_cast<int32_t>(
          std::max<int64_t>(1, static_cast<int64_t>(cores) / world_.size)));
    }
    // Every rank runs the same steps; rank 0 speaks for them.
    if (world_.rank != 0 && !std::freopen("/dev/null", "w", stdout))
      return error("cannot silence rank " + std::to_string(world_.rank));
  }
  for (const BufferInfo &b : m_.buffers) {
    Expected<int64_t> bytes = numBytes(b.spec.shape, b.spec.dtype);
    if (!bytes)
      return bytes.status().withContext("buffer '" + b.spec.name + "'");
    Slot s;
    s.info = &b;
    Expected<Storage> st = Storage::allocate(static_cast<size_t>(*bytes));
    if (!st)
      return st.status().withContext("buffer '" + b.spec.name + "'");
    s.current = std::move(*st);
    if (b.result) {
      Expected<Storage> next = Storage::allocate(static_cast<size_t>(*bytes));
      if (!next)
        return next.status().withContext("buffer '" + b.spec.name + "'");
      s.next = std::move(*next);
    }
    slots_.push_back(std::move(s));
  }
  Expected<Storage> ws = Storage::allocateWorkspace(
      static_cast<size_t>(std::max<int64_t>(m_.plannedBytes, 64)));
  if (!ws)
    return ws.status().withContext("the workspace (planned_bytes)");
  workspace_ = std::move(*ws);
  for (const TensorSpec &r : m_.evalResults) {
    Expected<int64_t> bytes = numBytes(r.shape, r.dtype);
    if (!bytes)
      return bytes.status();
    Expected<Storage> st = Storage::allocate(static_cast<size_t>(*bytes));
    if (!st)
      return st.status();
    evalResults_.push_back(std::move(*st));
  }

  if (o_.evalEvery > 0 &&
      (m_.evalResults.empty() || m_.evalResults[0].dtype != DType::F32 ||
       !m_.evalResults[0].shape.empty()))
    return error("--eval-every needs an eval function whose first result is "
                 "an f32 scalar loss");

  // Where each input comes from.
  tokens_ = slot("tokens");
  targets_ = slot("targets");
  dropoutSeed_ = slot("dropout_seed");
  auto isTokenSlot = [](Slot *s) {
    return s && s->info->role == BufferRole::Input &&
           (s->info->spec.dtype == DType::I32 ||
            s->info->spec.dtype == DType::I64) &&
           s->info->spec.shape.size() == 2;
  };
  bool lm = isTokenSlot(tokens_) && isTokenSlot(targets_) &&
            tokens_->info->spec.shape == targets_->info->spec.shape;
  if (!lm)
    tokens_ = targets_ = nullptr;
  if (dropoutSeed_ && !(dropoutSeed_->info->role == BufferRole::Input &&
                        dropoutSeed_->info->spec.dtype == DType::I64 &&
                        dropoutSeed_->info->spec.shape.empty()))
    dropoutSeed_ = nullptr;
  for (Slot &s : slots_) {
    if (s.info->role != BufferRole::Input || &s == tokens_ || &s == targets_ ||
        &s == dropoutSeed_ || !o_.batchDir.empty() || !o_.evalInputs.empty())
      continue;
    return error("input '" + s.info->spec.name +
                 "' has no data source: the runtime feeds 'tokens' and "
                 "'targets' from --data or synthetic data, and "
                 "'dropout_seed'; give --batch-dir DIR with " +
                 s.info->spec.name + ".npy");
  }
  if (tokens_) {
    const auto &shape = tokens_->info->spec.shape;
    tokensPerStep_ = shape[0] * shape[1];
    if (!o_.data.empty()) {
      Expected<TokenDataset> d = TokenDataset::load(o_.data, "train");
      if (!d)
        return d.status();
      train_ = std::move(*d);
      if (o_.evalEvery > 0) {
        Expected<TokenDataset> v = TokenDataset::load(o_.data, "val");
        if (!v)
          return v.status().withContext("--eval-every needs a val split");
        val_ = std::move(*v);
      }
      // Token ids index the embedding and label the loss: every split
      // must stay inside both ranges.
      for (const TokenDataset *d : {&*train_, val_ ? &*val_ : nullptr})
        for (Slot *input : {tokens_, targets_})
          if (d && input->info->range && d->maxToken() >= *input->info->range)
            return error("'" + o_.data + "': token " +
                         std::to_string(d->maxToken()) + " (" +
                         (d == &*train_ ? "train" : "val") +
                         " split) is outside the model's range of " +
                         std::to_string(*input->info->range) + " for '" +
                         input->info->spec.name + "'");
    } else if (!tokens_->info->range) {
      return error("synthetic data needs the vocabulary size, and the "
                   "manifest gives 'tokens' no range; give --data DIR");
    }
  } else {
    for (const Slot &s : slots_)
      if (s.info->role == BufferRole::Input && &s != dropoutSeed_ &&
          !s.info->spec.shape.empty()) {
        tokensPerStep_ = s.info->spec.shape[0]; // samples
        break;
      }
  }
  return Status::ok();
}

Status Trainer::fillBatch(uint64_t position, bool validation) {
  if (dropoutSeed_) {
    // Call site k of the graph uses seed * 2^16 + k: with mix64(seed) +
    // step here, steps (and runs) never share a dropout mask.
    // Data-parallel ranks draw different masks for their rows (rank 0
    // the masks of a single-process run).
    uint64_t rankSalt = static_cast<uint64_t>(dpRank_) * 0x9E3779B97F4A7C15ull;
    int64_t v = static_cast<int64_t>(mix64(o_.seed ^ rankSalt) + position);
    std::memcpy(dropoutSeed_->current.data(), &v, 8);
    anvil_rt_device_stage(dropoutSeed_->current.data(), 8);
  }
  if (!o_.batchDir.empty()) {
    if (batchLoaded_)
      return Status::ok();
    for (Slot &s : slots_) {
      if (s.info->role != BufferRole::Input || &s == dropoutSeed_)
        continue;
      if (Status st = readInput(o_.batchDir, s, dpRank_, dataParallel_); !st)
        return st;
      anvil_rt_device_stage(s.current.data(), s.current.size());
    }
    batchLoaded_ = true;
    return Status::ok();
  }
  if (!tokens_)
    return Status::ok();
  const auto &shape = tokens_->info->spec.shape;
  // The whole batch of all data-parallel ranks; this rank keeps its rows.
  int64_t rows = shape[0] * dataParallel_;
  std::vector<int32_t> in(static_cast<size_t>(rows * shape[1])),
      out(static_cast<size_t>(rows * shape[1]));
  // Validation batches come from their own stream (the val split, or
  // synthetic rows keyed by a different seed).
  uint64_t seed = validation ? o_.seed ^ 0x5EEDFA11C0FFEEull : o_.seed;
  Status st;
  if (!o_.data.empty())
    st = (validation ? *val_ : *train_)
             .sampleBatch(seed, position, rows, shape[1], in, out);
  else
    st = sampleSyntheticBatch(seed, position, *tokens_->info->range, rows,
                              shape[1], in, out);
  if (!st)
    return st;
  auto mine = [&](const std::vector<int32_t> &all) {
    auto first = all.begin() + dpRank_ * tokensPerStep_;
    return std::vector<int32_t>(first, first + tokensPerStep_);
  };
  storeTokens(mine(in), *tokens_);
  storeTokens(mine(out), *targets_);
  for (Slot *s : {tokens_, targets_})
    anvil_rt_device_stage(s->current.data(), s->current.size());
  return Status::ok();
}

Expected<double> Trainer::evaluate() {
  std::vector<void *> args(static_cast<size_t>(m_.evalStep.args), nullptr);
  for (Slot &s : slots_)
    if (s.info->evalIndex)
      args[static_cast<size_t>(*s.info->evalIndex)] = s.current.data();
  std::vector<void *> results;
  for (Storage &r : evalResults_)
    results.push_back(r.data());
  double total = 0;
  for (int64_t b = 0; b < o_.evalBatches; ++b) {
    if (Status s = fillBatch(static_cast<uint64_t>(b), /*validation=*/true); !s)
      return s;
    anvil_module_eval_step(args.data(), results.data(), workspace_.data());
    anvil_rt_begin_step(-1); // a device finishes the step before reads
    float loss;
    std::memcpy(&loss, evalResults_[0].data(), 4);
    total += loss;
  }
  return total / static_cast<double>(o_.evalBatches);
}

/// Fills the state from --seed through the module's anvil_module_init;
/// `numArgs` is the arity of the step whose argument positions the
/// manifest's "index" fields give.
Status Trainer::initState(int64_t numArgs) {
  std::vector<void *> args(static_cast<size_t>(numArgs), nullptr);
  for (Slot &s : slots_)
    if (s.info->init)
      args[static_cast<size_t>(s.info->index)] = s.current.data();
  if (anvil_module_init(o_.seed, args.data()) != 0)
    return Status::error(ErrorCode::InvalidArgument,
                         std::string("anvil_module_init: ") +
                             anvil_rt_last_error());
  return Status::ok();
}

/// Which elements of its whole tensor buffer `b` holds on this rank.
PieceLayout Trainer::layoutOf(const BufferInfo &b) const {
  return b.layout(mesh_.axes, coordinates_);
}

/// Whether this rank writes its piece of `b` to checkpoints: the ranks at
/// position 0 of every axis `b` is not sharded over (rank 0 alone for what
/// every rank holds whole).
bool Trainer::writesPiece(const BufferInfo &b) const {
  for (size_t a = 0; a < mesh_.axes.size(); ++a) {
    const std::string &axis = mesh_.axes[a].first;
    bool shardedOver = b.sharding && (b.sharding->splitAxis == axis ||
                                      b.sharding->flatAxis == axis);
    if (coordinates_[a] != 0 && !shardedOver)
      return false;
  }
  return true;
}

Status Trainer::checkpoint(int64_t step) {
  CheckpointInfo info{m_.fingerprint(), static_cast<uint64_t>(step), o_.seed,
                      static_cast<uint64_t>(step)};
  bool sharded = std::any_of(slots_.begin(), slots_.end(),
                             [](const Slot &s) { return s.info->sharding; });
  Expected<std::string> path = std::string();
  if (sharded) {
    // Every rank writes its pieces of the sharded state; rank 0 also what
    // every rank holds whole.
    std::vector<TensorPiece> pieces;
    for (const Slot &s : slots_) {
      if ((s.info->role != BufferRole::Param &&
           s.info->role != BufferRole::State) ||
          !writesPiece(*s.info))
        continue;
      PieceLayout layout = layoutOf(*s.info);
      size_t bytes = static_cast<size_t>(layout.elements()) *
                     dtypeSize(s.info->spec.dtype);
      pieces.push_back({s.info->globalSpec(), std::move(layout),
                        s.current.bytes().first(bytes)});
    }
    std::unique_ptr<Communicator> alone;
    if (!comm_)
      alone = makeSelfCommunicator(); // a mesh of one rank
    path = saveShardedCheckpoint(o_.ckptDir, info, pieces,
                                 comm_ ? *comm_ : *alone);
  } else {
    // Data-parallel ranks hold the same state: rank 0 writes it.
    if (world_.rank != 0)
      return Status::ok();
    std::vector<TensorRef> tensors;
    for (const Slot &s : slots_)
      if (s.info->role == BufferRole::Param ||
          s.info->role == BufferRole::State)
        tensors.push_back({s.info->spec, s.current.bytes()});
    path = saveCheckpoint(o_.ckptDir, info, tensors);
  }
  if (!path)
    return path.status();
  std::printf("checkpoint: %s\n", path->c_str());
  return Status::ok();
}

Status Trainer::resume(int64_t &step) {
  Expected<std::string> path = latestCheckpoint(o_.ckptDir);
  if (!path) {
    if (path.status().code() != ErrorCode::NotFound)
      return path.status();
    std::printf("--resume: no checkpoint in '%s' yet; starting at step 0\n",
                o_.ckptDir.c_str());
    step = 0;
    return Status::ok();
  }
  // Any mesh's checkpoint of this model: each buffer reads its range of the
  // whole tensor from whichever files hold it.
  Expected<CheckpointReader> ckpt =
      CheckpointReader::open(*path, m_.fingerprint(), m_.stateSpecs());
  if (!ckpt)
    return ckpt.status();
  if (ckpt->info().seed != o_.seed)
    return error(
        "checkpoint '" + *path + "' was written by a run with --seed " +
        std::to_string(ckpt->info().seed) + ", not " + std::to_string(o_.seed) +
        " (a resumed run keeps its seed: data order and dropout "
        "depend on it)");
  for (Slot &s : slots_) {
    if (s.info->role != BufferRole::Param && s.info->role != BufferRole::State)
      continue;
    PieceLayout layout = layoutOf(*s.info);
    size_t bytes =
        static_cast<size_t>(layout.elements()) * dtypeSize(s.info->spec.dtype);
    // A block's padding past the whole tensor stays zero.
    std::memset(s.current.data(), 0, s.current.size());
    if (Status st = ckpt->read(s.info->spec.name, layout,
                               s.current.bytes().first(bytes));
        !st)
      return st;
  }
  step = static_cast<int64_t>(ckpt->info().step);
  std::printf("resumed from %s at step %lld\n", path->c_str(),
              static_cast<long long>(step));
  return Status::ok();
}

Status Trainer::run() {
  if (!anvil_module_train_step)
    return error("this executable was compiled for evaluation only "
                 "(anvil-compile --entry); use --eval-inputs");
  int64_t step = 0;
  if (o_.resume) {
    if (Status s = resume(step); !s)
      return s;
  }
  if (step == 0)
    if (Status st = initState(m_.trainStep->args); !st)
      return st;
  if (comm_) {
    // Every rank must continue from rank 0's step (a checkpoint directory
    // that is not shared would let one start over).
    int64_t first = step;
    if (Status s = comm_->broadcast(&first, sizeof first, 0); !s)
      return s;
    if (first != step)
      return error("rank " + std::to_string(world_.rank) + " starts at step " +
                   std::to_string(step) + ", rank 0 at step " +
                   std::to_string(first) +
                   ": every rank must see the same --ckpt-dir");
  }

  std::optional<MetricsLog> log;
  if (!o_.log.empty() && world_.rank == 0) {
    Expected<MetricsLog> l = MetricsLog::open(
        o_.log, o_.resume ? std::optional<int64_t>(step) : std::nullopt);
    if (!l)
      return l.status();
    log.emplace(std::move(*l));
  }

  // The argument and result tables of train_step; state entries are
  // re-pointed after every swap.
  std::vector<void *> args(static_cast<size_t>(m_.trainStep->args), nullptr);
  std::vector<void *> results(static_cast<size_t>(m_.trainStep->results),
                              nullptr);
  Slot *loss = nullptr, *lr = nullptr;
  for (Slot &s : slots_) {
    bool isResult =
        s.info->role == BufferRole::Loss || s.info->role == BufferRole::Metric;
    (isResult ? results : args)[static_cast<size_t>(s.info->index)] =
        s.current.data();
    if (s.info->role == BufferRole::Loss)
      loss = &s;
    if (s.info->role == BufferRole::Metric && s.info->spec.name == "lr")
      lr = &s;
  }
  for (size_t r = 0; r < results.size(); ++r)
    if (!results[r] && !std::any_of(slots_.begin(), slots_.end(), [&](auto &s) {
          return s.info->result && *s.info->result == static_cast<int64_t>(r);
        }))
      return error("manifest: train_step result " + std::to_string(r) +
                   " has no buffer");
  if (!loss)
    return error("manifest: no loss buffer");

  bool tty = isatty(STDOUT_FILENO);
  std::printf("%s: %s, %lld steps, %.3g GFLOP per step, seed %llu%s\n",
              program_.c_str(), m_.model.c_str(),
              static_cast<long long>(o_.steps), m_.flopsPerStep / 1e9,
              static_cast<unsigned long long>(o_.seed),
              o_.data.empty() && o_.batchDir.empty() ? ", synthetic data" : "");
  if (const char *device = anvil_rt_device_description(); *device)
    std::printf("device: %s\n", device);
  if (!m_.stepGraphCapturable && !m_.stepGraphBlocker.empty())
    std::printf("the step runs without a CUDA graph: %s\n",
                m_.stepGraphBlocker.c_str());
  if (comm_) {
    std::string meshText;
    for (const auto &[axis, n] : mesh_.axes)
      meshText +=
          (meshText.empty() ? "" : ",") + axis + "=" + std::to_string(n);
    std::string batch = dataParallel_ > 1
                            ? "; each data-parallel rank takes 1/" +
                                  std::to_string(dataParallel_) +
                                  " of every batch"
                            : "";
    // The device's transport of generated code's collectives (NCCL),
    // where it is not the world's.
    std::string transport = comm_->transport();
    for (const auto &axis : axes_)
      if (axis->transport() != comm_->transport() &&
          transport.find(axis->transport()) == std::string::npos)
        transport += "; collectives over " + axis->transport();
    std::printf("%lld ranks, mesh %s (%s; ranks from %s)%s; the figures "
                "below are rank 0's\n",
                static_cast<long long>(world_.size), meshText.c_str(),
                transport.c_str(), world_.launcher.c_str(), batch.c_str());
  }
  {
    // What this rank holds (one generation; updated state has two).
    // Optimizer state is the state the optimizer names "opt.*".
    int64_t params = 0, optimizer = 0;
    for (const Slot &s : slots_) {
      auto bytes = static_cast<int64_t>(s.current.size());
      if (s.info->role == BufferRole::Param)
        params += bytes;
      else if (s.info->role == BufferRole::State &&
               s.info->spec.name.rfind("opt.", 0) == 0)
        optimizer += bytes;
    }
    std::printf("state per rank: %lld parameter bytes, %lld optimizer-state "
                "bytes\n",
                static_cast<long long>(params),
                static_cast<long long>(optimizer));
  }
  double windowSeconds = 0;
  int64_t windowSteps = 0;
  // The device's time of the window's steps, while every one has it.
  double windowDeviceSeconds = 0;
  bool windowDeviceTimed = true;
  const int64_t firstStep = step + 1; // reported too: where the loss starts
  for (; step < o_.steps;) {
    if (Status s = fillBatch(static_cast<uint64_t>(step), false); !s)
      return s;
    for (Slot &s : slots_) {
      if (s.info->role == BufferRole::Param ||
          s.info->role == BufferRole::State ||
          s.info->role == BufferRole::Input)
        args[static_cast<size_t>(s.info->index)] = s.current.data();
      if (s.next)
        results[static_cast<size_t>(*s.info->result)] = s.next->data();
    }
    anvil_rt_reset_peak_bytes();
    int64_t before = anvil_rt_allocated_bytes();
    auto t0 = std::chrono::steady_clock::now();
    anvil_rt_begin_step(step + 1);
    // The CUDA device replays a graph of the step where the compiler found
    // it capturable; the CPU calls it.
    anvil_rt_run_step(anvil_module_train_step, args.data(),
                      static_cast<int64_t>(args.size()), results.data(),
                      static_cast<int64_t>(results.size()), workspace_.data(),
                      m_.stepGraphCapturable ? 1 : 0);
    anvil_rt_begin_step(-1);
    auto t1 = std::chrono::steady_clock::now();
    measuredPeak_ = std::max(measuredPeak_,
                             m_.plannedBytes + anvil_rt_peak_bytes() - before);
    deviceUsed_ = std::max(deviceUsed_, anvil_rt_device_memory_used());
    double deviceSeconds = anvil_rt_device_step_seconds();
    windowDeviceTimed = windowDeviceTimed && deviceSeconds >= 0;
    windowDeviceSeconds += deviceSeconds;
    for (Slot &s : slots_)
      if (s.next)
        std::swap(s.current, *s.next);
    ++step;
    windowSeconds += std::chrono::duration<double>(t1 - t0).count();
    ++windowSteps;

    double lossValue = readScalar(*loss);
    if (!std::isfinite(lossValue))
      return Status::error(ErrorCode::Internal,
                           "step " + std::to_string(step) + ": the loss is " +
                               std::to_string(lossValue) +
                               " (diverged); the last checkpoint is intact");
    bool report =
        step % o_.logEvery == 0 || step == o_.steps || step == firstStep;
    bool evalNow = o_.evalEvery > 0 && anvil_module_eval_step &&
                   (step % o_.evalEvery == 0 || step == o_.steps);
    if (tty && !report) {
      int width = 30, done = static_cast<int>(width * step / o_.steps);
      std::printf("\r[%.*s%*s] %lld/%lld loss %.4f", done,
                  "##############################", width - done, "",
                  static_cast<long long>(step),
                  static_cast<long long>(o_.steps), lossValue);
      std::fflush(stdout);
    }
    if (report || evalNow) {
      StepMetrics metrics;
      metrics.step = step;
      metrics.totalSteps = o_.steps;
      metrics.loss = lossValue;
      metrics.lr = lr ? readScalar(*lr) : NAN;
      double perStep = windowSeconds / static_cast<double>(windowSteps);
      metrics.msPerStep = perStep * 1e3;
      metrics.tokensPerSecond = static_cast<double>(tokensPerStep_) / perStep;
      metrics.gflops = m_.flopsPerStep / perStep / 1e9;
      if (windowDeviceTimed)
        metrics.deviceMsPerStep =
            windowDeviceSeconds / static_cast<double>(windowSteps) * 1e3;
      if (evalNow) {
        Expected<double> evalLoss = evaluate();
        if (!evalLoss)
          return evalLoss.status().withContext("evaluation");
        metrics.evalLoss = *evalLoss;
      }
      std::printf("%s%s\n", tty ? "\r\033[K" : "",
                  formatProgressLine(metrics).c_str());
      std::fflush(stdout);
      if (log)
        if (Status s = log->write(metrics); !s)
          return s;
      windowSeconds = 0;
      windowSteps = 0;
      windowDeviceSeconds = 0;
      windowDeviceTimed = true;
    }
    if (!o_.ckptDir.empty() &&
        ((o_.ckptEvery > 0 && step % o_.ckptEvery == 0) || step == o_.steps))
      if (Status s = checkpoint(step); !s)
        return s;
  }
  std::printf("step memory: planned %lld bytes, measured peak %lld bytes\n",
              static_cast<long long>(m_.plannedBytes),
              static_cast<long long>(measuredPeak_));
  // Everything on the device: the workspace, parameters, state and
  // batches, the libraries' workspaces and pools, the context.
  if (deviceUsed_ >= 0)
    std::printf("device memory: at most %lld bytes in use after a step (the "
                "device's total less its free memory)\n",
                static_cast<long long>(deviceUsed_));
  if (!o_.ckptDir.empty())
    std::printf("checkpoints: %s (latest: step %lld)\n", o_.ckptDir.c_str(),
                static_cast<long long>(step));
  if (!o_.log.empty())
    std::printf("metrics: %s\n", o_.log.c_str());
  return Status::ok();
}

Status Trainer::evalOnce() {
  if (!anvil_module_eval_step)
    return error("this executable has no eval_step");
  // Parameters start from their initializers (--seed); a file
  // DIR/NAME.npy replaces any argument's value.
  if (Status st =
          initState(m_.trainStep ? m_.trainStep->args : m_.evalStep.args);
      !st)
    return st;
  std::vector<void *> args(static_cast<size_t>(m_.evalStep.args), nullptr);
  for (Slot &s : slots_) {
    if (!s.info->evalIndex)
      continue;
    args[static_cast<size_t>(*s.info->evalIndex)] = s.current.data();
    std::string path = o_.evalInputs + "/" + s.info->spec.name + ".npy";
    if (access(path.c_str(), F_OK) != 0 && s.info->init)
      continue;
    if (Status st = readInput(o_.evalInputs, s); !st)
      return st;
  }
  std::vector<void *> results;
  for (Storage &r : evalResults_)
    results.push_back(r.data());
  anvil_module_eval_step(args.data(), results.data(), workspace_.data());
  anvil_rt_begin_step(-1); // a device finishes the step before reads
  for (size_t r = 0; r < evalResults_.size(); ++r) {
    const TensorSpec &spec = m_.evalResults[r];
    std::string path = o_.evalOutputs + "/" + spec.name + ".npy";
    if (Status s =
            writeNpy(path, spec.dtype, spec.shape, evalResults_[r].bytes());
        !s)
      return s;
  }
  return Status::ok();
}

} // namespace

int trainerMain(int argc, char **argv) {
  std::string program = argc > 0 ? argv[0] : "anvil-train";
  if (size_t slash = program.rfind('/'); slash != std::string::npos)
    program = program.substr(slash + 1);
  auto fail = [&](const Status &s) {
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(),
                 s.message().c_str());
    return 1;
  };
  Expected<Manifest> manifest = Manifest::parse(anvil_module_manifest());
  if (!manifest)
    return fail(manifest.status().withContext("the embedded manifest"));
  Expected<TrainOptions> options = parseTrainOptions(
      std::span<const char *const>(argv + 1, static_cast<size_t>(argc - 1)));
  if (!options)
    return fail(options.status());
  if (options->help) {
    std::printf("%s\nModel: %s, %zu buffers, %.3g GFLOP per step.\n",
                trainUsage(program).c_str(), manifest->model.c_str(),
                manifest->buffers.size(), manifest->flopsPerStep / 1e9);
    if (manifest->hasStepGraph)
      std::printf(
          "\nCUDA (compiled with --target=cuda), from the environment:\n"
          "  ANVIL_CUDA_LAUNCHES=graph  replay the training step as a CUDA "
          "graph from its\n"
          "                             second run (the default; %s)\n"
          "  ANVIL_CUDA_LAUNCHES=async  launch kernel by kernel, waiting at "
          "the step's end\n"
          "  ANVIL_CUDA_LAUNCHES=sync   wait for every kernel and library "
          "call (an error\n"
          "                             names its kernel)\n"
          "  ANVIL_PROFILE=1            print each kernel's and library "
          "call's time at exit\n"
          "                             (implies sync)\n"
          "  ANVIL_CUDA_ATTENTION=anvil Anvil's fused attention kernels "
          "for every call\n"
          "                             (the default, cudnn: cuDNN's where "
          "it takes the\n"
          "                             shape)\n"
          "  ANVIL_NCCL=0               a mesh's collectives over MPI, not "
          "NCCL\n",
          manifest->stepGraphCapturable
              ? "this step can be"
              : ("this step cannot: " + manifest->stepGraphBlocker).c_str());
    return 0;
  }
  if (options->printManifest) {
    std::printf("%s\n", anvil_module_manifest());
    return 0;
  }
  anvil_rt_set_num_threads(options->threads);
  Trainer trainer(std::move(*manifest), *options, program);
  // A rank that fails ends the whole world: the others would wait in a
  // collective forever.
  auto failAll = [&](const Status &s) {
    int rc = fail(s);
    trainer.abortWorld(rc);
    return rc;
  };
  if (Status s = trainer.setUp(); !s)
    return failAll(s);
  Status s = options->evalInputs.empty() ? trainer.run() : trainer.evalOnce();
  return s ? 0 : failAll(s);
}

} // namespace anvil::rt
