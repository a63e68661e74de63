//===- Passes.td - passes that build training graphs --------*- tablegen -*-===//
//
// Differentiation (and, next, the optimizer step) of forward graphs.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TRAINING_PASSES_TD
#define ANVIL_TRAINING_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnvilAutodiffPass : Pass<"anvil-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of a forward graph";
  let description = [{
    Adds `@<function>_grad` next to the forward function: the same
    arguments, and results `(loss, dL/dp for every trainable parameter
    p, in argument order [, dL/dx for every float input x with
    wrt-inputs])`. Each gradient result carries `anvil.grad = "<name>"`.

    1. Activity: starting from the trainable parameters (and float inputs
       with `wrt-inputs`), mark every float value computed from them,
       except through `anvil.stop_gradient` and ops with the
       NonDifferentiable trait. Frozen parameters are not active, so they
       get no gradient and no backward ops.
    2. Seed dL/dL = 1 for the scalar loss (the first result).
    3. Walk the ops backwards; for each op with an active operand and a
       gradient on one of its results, call its VJP rule (VJPOpInterface),
       which reuses the op's forward operands and results. Gradients of a
       value used several times are summed.
    4. Return the loss and the gradients; a trainable parameter the loss
       does not depend on gets zeros. Ops whose results nothing uses are
       erased (gradients of operands that need none, dead forward values).

    A loss that is not a float scalar, a function with more than one
    block, or an active op without a VJP rule is a diagnostic at that op.

    Before:
    ```mlir
    func.func @forward(%w: tensor<3xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>},
                       %x: tensor<3xf32> {anvil.input = #anvil.input<name = "x">}) -> tensor<f32> {
      %y = anvil.mul %w, %x : tensor<3xf32>
      %l = anvil.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
    After (added):
    ```mlir
    func.func @forward_grad(%w: ..., %x: ...) -> (tensor<f32>, tensor<3xf32> {anvil.grad = "w"}) {
      %y = anvil.mul %w, %x : tensor<3xf32>
      %l = anvil.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
      %one = anvil.constant dense<1.0> : tensor<f32>
      %g = anvil.broadcast ... // dL/dy
      %gw = anvil.mul %g, %x : tensor<3xf32>
      return %l, %gw : tensor<f32>, tensor<3xf32>
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function to differentiate">,
    Option<"wrtInputs", "wrt-inputs", "bool", /*default=*/"false",
           "Also return gradients of the float inputs">,
  ];
  let dependentDialects = ["mlir::anvil::AnvilDialect"];
}

def AnvilOptimizerPass : Pass<"anvil-optimizer", "mlir::ModuleOp"> {
  let summary = "Builds @train_step: forward, backward and the optimizer update";
  let description = [{
    Adds `@train_step` next to the forward function:

    ```
    @train_step(params..., optimizer state..., step, inputs...)
        -> (loss, metrics..., params'..., state'..., step')
    ```

    1. Clone the forward function and differentiate it (as anvil-autodiff)
       with respect to the trainable parameters.
    2. Add the optimizer state as `anvil.state` arguments after the
       parameters, zero-initialized: `opt.<optimizer>.<m|v|momentum|sum>.<param>`
       per trainable parameter, and `step`, the number of steps taken (f32).
    3. Compute, from `t = step + 1`, the learning rate: linear warm-up over
       `warmup` steps, then `cosine` or `linear` decay to
       `min-lr-ratio * lr` at `total-steps` (or constant with `none`).
    4. With `clip > 0`, scale all gradients by min(1, clip / (norm + 1e-6)),
       the norm taken over all of them together.
    5. Update each trainable parameter by the optimizer's published rule
       (PyTorch's conventions):
       - `sgd`: g += wd p; with momentum mu, buf = mu buf + g and the step
         is buf (or g + mu buf with Nesterov); p -= lr step.
       - `adam` (L2 decay g += wd p) and `adamw` (decoupled p -= lr wd p):
         m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
         p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
       - `lamb`: Adam's moments; r = m^ / (sqrt(v^) + eps) + wd p;
         p -= lr (|p| / |r|) r (trust ratio 1 if either norm is 0).
       - `adagrad`: g += wd p; sum += g^2; p -= lr g / (sqrt(sum) + eps).
       Weight decay applies to parameters of rank 2 or more (not to norms
       and biases) unless `decay-all` is set. The update is computed in f32
       (f64 for f64 parameters) and rounded to the parameter's type.
    6. Return the loss, the forward function's other results (metrics),
       and every updated state value, each with
       `anvil.tied_to = <argument index>` so that it is updated in place.
       Results of the forward function that are already tied (the updates
       of buffers, such as batch norm's running statistics) join the state
       values; the forward function then loses them, so that evaluating it
       reads buffers and never updates them, and each of its
       `batch_norm_train` ops whose batch mean and variance update two
       buffers becomes a `batch_norm_inference` on those buffers (the
       running statistics, as in PyTorch's eval()).
    7. With `accumulate = K`, every input gets a leading dimension K and the
       forward pass is unrolled over the K micro-batches; the loss is their
       mean, so the gradients are the mean of the micro-batch gradients.
       A forward function that updates buffers cannot be unrolled (each
       micro-batch would update them): that is an error.
    8. With `loss-scale=dynamic`, state `loss_scale` (scale-init) and
       `loss_scale.good_steps` are added; backward starts from dL/dL =
       scale, the gradients are divided by it, and a step whose gradients
       are not finite changes nothing but halves the scale (PyTorch's
       GradScaler); after scale-growth-interval finite steps it doubles.
    9. With `data-parallel = N > 1` the step is one rank's of N: each
       gradient, the loss and every float buffer update are averaged over
       the ranks of mesh axis `dp` (`anvil.all_reduce mean`), the gradients
       before clipping and the update, so every rank applies the same
       update and keeps the same state. For a loss that is a mean over
       equal per-rank shares this is the update of the whole batch; batch
       statistics (batch norm) and losses normalized per rank (ignored
       labels, foreground counts) are per rank, as in PyTorch's DDP.

    A bad option value is an error naming it.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"forward\"",
           "The forward function">,
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "sgd, adam, adamw, lamb or adagrad">,
    Option<"lr", "lr", "double", "1e-3", "Peak learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "Adam/LAMB first-moment decay">,
    Option<"beta2", "beta2", "double", "0.999",
           "Adam/LAMB second-moment decay">,
    Option<"eps", "eps", "double", "1e-8", "Denominator epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "Weight decay (L2 for sgd/adam/adagrad, decoupled for adamw/lamb)">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"clip", "clip", "double", "0.0",
           "Global gradient-norm clipping threshold (0: off)">,
    Option<"warmup", "warmup", "int64_t", "0", "Linear warm-up steps">,
    Option<"decay", "decay", "std::string", "\"none\"",
           "After warm-up: none, cosine or linear">,
    Option<"totalSteps", "total-steps", "int64_t", "0",
           "The step at which the decay ends">,
    Option<"minLrRatio", "min-lr-ratio", "double", "0.0",
           "The decayed learning rate as a fraction of lr">,
    Option<"decayAll", "decay-all", "bool", "false",
           "Also decay parameters of rank 0 and 1 (norms, biases)">,
    Option<"dataParallel", "data-parallel", "int64_t", "1",
           "Ranks of the data-parallel mesh axis \"dp\": each runs this step "
           "on its share of the batch, and the gradients and the loss are "
           "averaged over them (anvil.all_reduce mean)">,
    Option<"zero", "zero", "int64_t", "0",
           "ZeRO stage: 1 shards the optimizer state over the data-parallel "
           "ranks (each updates its block of every flattened parameter from "
           "reduce-scattered gradients, then the blocks are all-gathered); "
           "0 keeps the whole state on every rank">,
    Option<"accumulate", "accumulate", "int64_t", "1",
           "Gradient accumulation: every input gets a leading dimension of "
           "this many micro-batches, and the loss is their mean">,
    Option<"lossScale", "loss-scale", "std::string", "\"none\"",
           "none, or dynamic (for f16): scale the loss, skip steps whose "
           "gradients overflow">,
    Option<"scaleInit", "scale-init", "double", "65536.0",
           "Initial dynamic loss scale">,
    Option<"scaleInterval", "scale-growth-interval", "int64_t", "2000",
           "Finite steps before the loss scale doubles">,
  ];
  let dependentDialects = ["mlir::anvil::AnvilDialect"];
}

#endif // ANVIL_TRAINING_PASSES_TD
