//===- Run.cpp - anvil-run: start the ranks of a sharded program ----------===//
//
//   anvil-run -n 4 ./gpt.train --steps 100 ...
//
// starts N processes of the program on this machine through Open MPI's
// mpirun (found on PATH, or $ANVIL_MPIRUN), which gives each its rank; the
// program reads it like any launcher's (anvil::rt::worldFromEnvironment).
// The same executables run under mpirun and srun directly.
//
//===----------------------------------------------------------------------===//

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    "usage: anvil-run -n N [--] PROGRAM [ARGS...]\n"
    "\n"
    "Starts N ranks of PROGRAM (a compiled Anvil executable) on this machine\n"
    "through Open MPI's mpirun, which tells each process its rank; the\n"
    "program reads it from the environment. On a cluster, start the same\n"
    "executable with mpirun or srun directly; RANK, WORLD_SIZE and\n"
    "LOCAL_RANK are honoured too, when an MPI launcher started the ranks.\n"
    "\n"
    "options:\n"
    "  -n N        number of ranks (at least 1)\n"
    "  -h, --help  this text\n"
    "\n"
    "environment:\n"
    "  ANVIL_MPIRUN  the mpirun to use (default: mpirun on PATH)\n";

int fail(const std::string &message) {
  std::fprintf(stderr, "anvil-run: error: %s\n", message.c_str());
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  int ranks = 0;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-n" || a.rfind("-n", 0) == 0) {
      std::string value =
          a == "-n" ? (i + 1 < argc ? argv[++i] : "") : a.substr(2);
      auto [p, ec] =
          std::from_chars(value.data(), value.data() + value.size(), ranks);
      if (ec != std::errc() || p != value.data() + value.size() || ranks < 1)
        return fail("-n '" + value + "' is not a positive number of ranks");
      continue;
    }
    if (!a.empty() && a[0] == '-')
      return fail("unknown option '" + a + "' (see --help)");
    break;
  }
  if (ranks == 0)
    return fail("give the number of ranks with -n N (see --help)");
  if (i >= argc)
    return fail("no program to run (see --help)");

  const char *mpirun = std::getenv("ANVIL_MPIRUN");
  // No binding: each rank runs its own threads (the trainer gives each a
  // share of the cores).
  std::vector<std::string> args{mpirun && *mpirun ? mpirun : "mpirun",
                                "-n",
                                std::to_string(ranks),
                                "--oversubscribe",
                                "--bind-to",
                                "none"};
  // Open MPI refuses root unless told; containers commonly run as root.
  if (geteuid() == 0)
    args.push_back("--allow-run-as-root");
  for (; i < argc; ++i)
    args.push_back(argv[i]);
  std::vector<char *> raw;
  for (std::string &a : args)
    raw.push_back(a.data());
  raw.push_back(nullptr);
  execvp(raw[0], raw.data());
  return fail("cannot start '" + args[0] + "': " + std::strerror(errno) +
              (errno == ENOENT ? " (install Open MPI's openmpi-bin, or set "
                                 "ANVIL_MPIRUN)"
                               : ""));
}
