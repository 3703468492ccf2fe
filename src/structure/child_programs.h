// What the structure sources share to run a helper program (pdb2pqr30, gemmi, Open Babel's
// charges) in their private temporary folder and to report on it: finding the program, running
// it with its output in a log, the lines of that log, the equivalent command's shell words, and
// writing small text files atomically.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace espgrid {

/// `name` on the PATH (or `name` itself when it holds a '/'), if it is an executable file.
std::optional<std::string> find_program(const std::string& name);
/// The program named by environment variable `variable`, or `fallback` on the PATH; Error
/// saying what to install when there is none.
std::string resolve_program(const char* variable, const std::string& fallback, const std::string& needed_for,
                            const std::string& package);

struct ProgramRun {
  int exit_code = -1;  ///< -1 when a signal ended it
  int signal = 0;
  std::string output;  ///< stdout and stderr together
};
/// Runs argv (argv[0] a path) in `folder` (os/child_process.h: run_child, in a process
/// group the interrupt handler ends) with stdin from /dev/null and stdout and stderr into
/// folder/`log_name`; no shell is involved, so no name needs quoting. `waiting` as run_child's.
ProgramRun run_program(const std::vector<std::string>& argv, const std::filesystem::path& folder,
                       const std::string& log_name, const std::function<void()>& waiting);
/// "killed by signal 9", "exit code 2": how a run ended, for messages.
std::string ending_text(const ProgramRun& run);

/// Reads a whole file (a log in the temporary folder) as text; empty when it cannot.
std::string file_text(const std::filesystem::path& path);
/// The free space of the file system holding `folder`, for messages about a full TMPDIR: ""
/// when there is room, else a line saying it is full.
std::string full_note(const std::filesystem::path& folder);

std::string trimmed(std::string s);
std::vector<std::string> lines_of(const std::string& text);
/// The last `count` non-empty lines, trimmed.
std::vector<std::string> tail(const std::string& text, std::size_t count);
/// Each line on a line of its own, indented by two spaces.
std::string indented(const std::vector<std::string>& lines);
/// `word` as a shell word: as it is when it needs no quoting, else in single quotes. For the
/// equivalent command lines people copy.
std::string shell_word(const std::string& word);

/// Writes `size` bytes to `fd`, retrying short writes; false with errno set on failure.
bool write_all(int fd, const char* data, std::size_t size);
/// Writes `text` to `destination` atomically (os/atomic_output_file.h); Error naming the
/// destination and the reason.
void write_text_file(const std::string& destination, const std::string& text);

}  // namespace espgrid
