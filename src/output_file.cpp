#include "src/output_file.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "src/errors.h"

namespace espgrid {
namespace {

// Pending temporary paths, readable from a signal handler: fixed slots of plain char arrays.
constexpr std::size_t kSlots = 8;
constexpr std::size_t kPathMax = 4096;
std::array<std::array<char, kPathMax>, kSlots> g_pending{};
std::array<std::atomic<bool>, kSlots> g_in_use{};

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
  const char message[] = "\nespgrid: interrupted; no output written\n";
  [[maybe_unused]] auto ignored = ::write(STDERR_FILENO, message, sizeof message - 1);
  ::_exit(128 + signal_number);
}


}  // namespace

void check_output_path(const std::string& destination) {
  namespace fs = std::filesystem;
  if (destination.empty()) throw UsageError("no output path given");
  const fs::path dest(destination);
  if (fs::is_directory(dest)) throw Error("cannot write " + destination + ": it is a directory");
  fs::path dir = dest.parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir))
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
}

void install_interrupt_cleanup() {
  struct sigaction action{};
  action.sa_handler = remove_pending_and_exit;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace espgrid
