#include "src/io/atomic_output_file.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "src/core/errors.h"

namespace espgrid {
namespace {

// Pending temporary paths, readable from a signal handler: fixed slots of plain char arrays.
constexpr std::size_t kSlots = 8;
constexpr std::size_t kPathMax = 4096;
std::array<std::array<char, kPathMax>, kSlots> g_pending{};
std::array<std::atomic<bool>, kSlots> g_in_use{};
std::atomic<int> g_committed{0};  // maps already renamed into place, for the interrupt message

int register_pending(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  for (std::size_t s = 0; s < kSlots; ++s) {
    bool expected = false;
    if (g_in_use[s].compare_exchange_strong(expected, true)) {
      std::memcpy(g_pending[s].data(), path.c_str(), path.size() + 1);
      return static_cast<int>(s);
    }
  }
  return -1;
}

void release_pending(int slot) {
  if (slot >= 0) g_in_use[static_cast<std::size_t>(slot)].store(false);
}

extern "C" void remove_pending_and_exit(int signal_number) {
  for (std::size_t s = 0; s < kSlots; ++s)
    if (g_in_use[s].load()) ::unlink(g_pending[s].data());  // async-signal-safe
  static const char kNone[] = "\nespgrid: interrupted; no output written\n";
  static const char kSome[] =
      "\nespgrid: interrupted; the unfinished map was removed (maps already completed were kept)\n";
  const bool some = g_committed.load() > 0;
  [[maybe_unused]] auto ignored =
      ::write(STDERR_FILENO, some ? kSome : kNone, (some ? sizeof kSome : sizeof kNone) - 1);
  ::_exit(128 + signal_number);
}

}  // namespace

void check_output_path(const std::string& destination) {
  namespace fs = std::filesystem;
  if (destination.empty()) throw UsageError("no output path given");
  const fs::path dest(destination);
  // error_code forms: the throwing ones raised std::filesystem_error (not an espgrid::Error)
  // for a name over NAME_MAX or a directory that cannot be searched.
  std::error_code ec;
  const fs::file_status dest_status = fs::status(dest, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw Error("cannot write " + destination + ": " + ec.message());
  if (fs::is_directory(dest_status)) throw Error("cannot write " + destination + ": it is a directory");
  fs::path dir = dest.parent_path();
  if (dir.empty()) dir = ".";
  const fs::file_status dir_status = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw Error("cannot write " + destination + ": " + ec.message());
  if (fs::exists(dir_status) && !fs::is_directory(dir_status))
    throw Error("cannot write " + destination + ": " + dir.string() + " is not a directory");
  if (!fs::is_directory(dir_status))
    throw Error("cannot write " + destination + ": directory " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw Error("cannot write " + destination + ": directory " + dir.string() + " is not writable (" +
                std::strerror(errno) + ")");
}

AtomicOutputFile::AtomicOutputFile(std::string destination) : destination_(std::move(destination)) {
  check_output_path(destination_);
  const std::filesystem::path dest(destination_);
  std::filesystem::path dir = dest.parent_path();
  if (dir.empty()) dir = ".";
  // ".NAME.partial.PID": hidden, beside the destination so the final rename stays on one file system
  std::string name = dest.filename().string();
  name.insert(0, 1, '.');
  name.append(".partial.").append(std::to_string(::getpid()));
  temporary_ = (dir / name).string();
  slot_ = register_pending(temporary_);
}

AtomicOutputFile::~AtomicOutputFile() {
  if (!committed_) {
    std::error_code ignored;
    std::filesystem::remove(temporary_, ignored);
  }
  release_pending(slot_);
}

void AtomicOutputFile::commit() {
  std::error_code ec;
  std::filesystem::rename(temporary_, destination_, ec);
  if (ec) throw Error("cannot move finished map to " + destination_ + ": " + ec.message());
  committed_ = true;
  g_committed.fetch_add(1);
}

void install_interrupt_cleanup() {
  struct sigaction action {};
  action.sa_handler = remove_pending_and_exit;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);  // terminal closed: same cleanup, exit 129
  // Over the file-size limit (ulimit -f) the default action killed the process mid-write and
  // left the temporary file behind; ignored, the write fails with EFBIG and is reported.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGXFSZ, &ignore, nullptr);
}

}  // namespace espgrid
