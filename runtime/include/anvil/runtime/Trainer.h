//===- Trainer.h - the training loop of a compiled executable ------*- C++
//-*-===//
//
// A training executable is the compiler's object file (the math) linked
// with this driver (the loop). The object exports the C ABI of DESIGN.md's
// contract 3:
//
//   const char *anvil_module_manifest(void);           // JSON, Manifest.h
//   int32_t anvil_module_init(uint64_t seed, void **args); // 0: success
//   void anvil_module_train_step(void **args, void **results, void *ws);
//   void anvil_module_eval_step(void **args, void **results, void *ws);
//
// `args[i]` points at argument i of the step (parameters, state, inputs),
// `results[j]` at the buffer result j is written to, and `ws` at the
// workspace of the compiler's static memory plan. Every one of these
// pointers must be 64-byte aligned (the driver's allocations are; the
// memory plan keeps its buffers at multiples of 64 bytes): generated
// kernels access aligned runs of elements as vectors (CUDA's
// ld.global.v4) and a misaligned buffer faults. The workspace holds the
// manifest's planned_bytes, allocated once: every temporary of a step
// lives in it (the driver measures anything generated code allocates
// besides, so the measured peak of a step is planned_bytes when the plan
// is complete). The
// driver owns every buffer: it initializes the state from the manifest's
// initializers (bit-identical to anvil-interp for the same seed), feeds
// batches, checkpoints, resumes, logs and evaluates. The step updates the
// state in place; a manifest that gives a state buffer a "result" of its
// own gets two generations of it instead, read and written alternately. A
// module compiled for evaluation only (--entry) has no train_step; its
// executable supports --eval-inputs only.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_TRAINER_H
#define ANVIL_RUNTIME_TRAINER_H

#include <cstdint>

extern "C" {
const char *anvil_module_manifest(void);
int32_t anvil_module_init(uint64_t seed, void **args);
// Weak: an eval-only module defines only eval_step.
__attribute__((weak)) void anvil_module_train_step(void **args, void **results,
                                                   void *workspace);
__attribute__((weak)) void anvil_module_eval_step(void **args, void **results,
                                                  void *workspace);
}

namespace anvil::rt {

/// The executable's main: parses the options (TrainOptions.h), runs, and
/// returns the exit code. Errors are printed as "<program>: error: ..." and
/// give exit code 1; nothing already written (checkpoints, metrics) is
/// damaged by a failure.
int trainerMain(int argc, char **argv);

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_TRAINER_H
