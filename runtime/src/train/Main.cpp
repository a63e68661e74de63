//===- Main.cpp - main() of every training executable ---------------------===//
//
// Linked into each executable `anvil-compile --target=cpu` produces; the
// module's object supplies the anvil_module_* functions (Trainer.h).
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Trainer.h"

int main(int argc, char **argv) { return anvil::rt::trainerMain(argc, argv); }
