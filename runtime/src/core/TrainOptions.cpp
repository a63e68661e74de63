//===- TrainOptions.cpp - the training executable's command line ----------===//

#include "anvil/runtime/TrainOptions.h"

#include <cerrno>
#include <cstdlib>
#include <string_view>

namespace anvil::rt {

static Status bad(std::string_view option, const std::string &msg) {
  return Status::error(ErrorCode::InvalidArgument,
                       std::string(option) + " " + msg);
}

static Expected<int64_t> integer(std::string_view option, const char *text,
                                 int64_t min) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || errno || v < min)
    return bad(option, "expects an integer >= " + std::to_string(min) +
                           ", got '" + text + "'");
  return static_cast<int64_t>(v);
}

Expected<TrainOptions> parseTrainOptions(std::span<const char *const> args) {
  TrainOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    std::string inlineValue;
    bool hasInline = false;
    if (size_t eq = a.find('='); a.starts_with("--") && eq != a.npos) {
      inlineValue = std::string(a.substr(eq + 1));
      a = a.substr(0, eq);
      hasInline = true;
    }
    auto value = [&]() -> Expected<const char *> {
      if (hasInline)
        return inlineValue.c_str();
      if (i + 1 >= args.size())
        return bad(a, "needs a value");
      return args[++i];
    };
    auto flag = [&]() -> Status {
      return hasInline ? bad(a, "takes no value") : Status::ok();
    };
    auto setInt = [&](int64_t &field, int64_t min) -> Status {
      Expected<const char *> v = value();
      if (!v)
        return v.status();
      Expected<int64_t> n = integer(a, *v, min);
      if (!n)
        return n.status();
      field = *n;
      return Status::ok();
    };
    auto setString = [&](std::string &field) -> Status {
      Expected<const char *> v = value();
      if (!v)
        return v.status();
      if (!**v)
        return bad(a, "needs a non-empty value");
      field = *v;
      return Status::ok();
    };
    Status s;
    if (a == "-h" || a == "--help") {
      s = flag();
      o.help = true;
    } else if (a == "--data") {
      s = setString(o.data);
    } else if (a == "--steps") {
      s = setInt(o.steps, 1);
    } else if (a == "--seed") {
      int64_t seed = 0;
      s = setInt(seed, 0);
      o.seed = static_cast<uint64_t>(seed);
    } else if (a == "--ckpt-dir") {
      s = setString(o.ckptDir);
    } else if (a == "--ckpt-every") {
      s = setInt(o.ckptEvery, 0);
    } else if (a == "--resume") {
      s = flag();
      o.resume = true;
    } else if (a == "--eval-every") {
      s = setInt(o.evalEvery, 0);
    } else if (a == "--eval-batches") {
      s = setInt(o.evalBatches, 1);
    } else if (a == "--log-every") {
      s = setInt(o.logEvery, 1);
    } else if (a == "--log") {
      s = setString(o.log);
    } else if (a == "--batch-dir") {
      s = setString(o.batchDir);
    } else if (a == "--eval-inputs") {
      s = setString(o.evalInputs);
    } else if (a == "--eval-outputs") {
      s = setString(o.evalOutputs);
    } else if (a == "--print-manifest") {
      s = flag();
      o.printManifest = true;
    } else if (a == "--threads") {
      int64_t t = 0;
      s = setInt(t, 0);
      if (s && t > 4096)
        s = bad(a, "expects at most 4096 threads");
      o.threads = static_cast<int>(t);
    } else {
      s = Status::error(ErrorCode::InvalidArgument, "unknown option '" +
                                                        std::string(args[i]) +
                                                        "' (see --help)");
    }
    if (!s)
      return s;
  }
  if (!o.help && o.evalInputs.empty() != o.evalOutputs.empty())
    return Status::error(ErrorCode::InvalidArgument,
                         "--eval-inputs and --eval-outputs go together");
  if (!o.help && (o.resume || o.ckptEvery > 0) && o.ckptDir.empty())
    return Status::error(ErrorCode::InvalidArgument,
                         std::string(o.resume ? "--resume" : "--ckpt-every") +
                             " needs --ckpt-dir");
  return o;
}

std::string trainUsage(const std::string &program) {
  return "usage: " + program + R"( [options]

Trains the model this executable was compiled for, on Anvil's runtime.

  --data DIR         token shards (llm.c format: *train*.bin, *val*.bin;
                     make them with anvil-make-shard); default: synthetic
  --steps N          total steps of the run, counting resumed ones (100)
  --seed S           seed of initialization, dropout and data order (0)
  --ckpt-dir D       write checkpoints (safetensors) to D
  --ckpt-every K     checkpoint every K steps (0: only at the end)
  --resume           continue exactly from D/latest
  --eval-every K     evaluate on the val split every K steps (0: never)
  --eval-batches B   batches per evaluation (8)
  --log-every K      print a progress line every K steps (10)
  --log FILE         append one JSON object per logged step to FILE
  --threads T        CPU threads (0: all cores)
  --batch-dir DIR    feed every step the same batch: input NAME from
                     DIR/NAME.npy (models whose inputs are not token ids)
  --eval-inputs DIR  evaluate once: arguments from DIR/NAME.npy (parameters
                     not there are initialized from --seed), results to
  --eval-outputs DIR DIR/result<i>.npy; then exit
  --print-manifest   print the embedded manifest (JSON) and exit
  -h, --help         print this and exit

Token models read their inputs 'tokens' and 'targets' from --data, or
from synthetic data (a learnable pattern) when --data is not given; an
input 'dropout_seed' gets a fresh seed every step.
)";
}

} // namespace anvil::rt
