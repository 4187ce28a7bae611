// Pins what the trace reader (bench/replay/trace.hpp) does with files it must
// refuse: every malformed event, number, line and compressed stream is a
// std::runtime_error naming the file, the line and what is wrong, and a file
// it accepts is read exactly as written (P3's spirit, for the replays' input).
//
// Why: the replays' figures (bench/RESULTS.md) are only as good as the
// trace read. The reader takes files users hand it, so a corrupt one must
// stop the replay, not become a slightly different workload: before this
// audit (review1) a truncated .gz, a size of -5, 2^64 live bytes, a
// misspelt fact or a fact longer than 511 bytes were read silently as
// something else. Each of those rows failed then. Lines are bounded (64
// KiB), so a file of one endless line is refused, not read whole.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "replay/trace.hpp"

namespace taintpool::replay {
namespace {

/// A fresh directory per test, removed after it.
class TraceFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "taintpool-trace-XXXXXX");
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// Writes `bytes` (NULs included) to `name` in the directory.
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::ssize(bytes));
    return path;
  }

  /// The message load_trace throws for `path`, or "accepted".
  static std::string refusal(const std::string& path) {
    try {
      static_cast<void>(load_trace(path));
    } catch (const std::runtime_error& error) {
      return error.what();
    }
    return "accepted";
  }

  std::filesystem::path dir_;
};

struct Malformed {
  const char* why;
  std::string text;  ///< The whole file.
  const char* line;  ///< ":<n>:" — the line the refusal must name.
  const char* words; ///< What the refusal must say.
};

TEST_F(TraceFiles, P3_EveryMalformedEventIsRefusedNamingItsFileAndLine) {
  using namespace std::string_literals;
  const std::vector<Malformed> table = {
      {"a negative size", "a 1 10 0\na 2 -5 0\n", ":2:", "size"},
      {"a negative id", "a -1 10 0\n", ":1:", "id"},
      {"a plus sign", "a 1 +10 0\n", ":1:", "size"},
      {"a size past 2^64", "a 1 99999999999999999999 0\n", ":1:", "size"},
      {"an id past 2^64", "a 99999999999999999999 1 0\n", ":1:", "id"},
      {"a size with a unit", "a 1 10k 0\n", ":1:", "size"},
      {"a field too many", "a 1 10 0 7\n", ":1:", "after"},
      {"words after a free", "a 1 10 0\nf 1 10 junk\n", ":2:", "after"},
      {"a NUL inside the line", "a 1 10\0 0\n"s, ":1:", "size"},
      {"a stream that is no number", "a 1 10 s0\n", ":1:", "stream"},
      {"a size missing", "a 1\n", ":1:", "size"},
      {"an id missing", "f\n", ":1:", "id"},
      {"an event word", "alloc 1 10 0\n", ":1:", "unknown event"},
      {"an unknown event", "a 1 10 0\nx 1 10\n", ":2:", "unknown event"},
      {"a line that starts with a blank", "a 1 10 0\n a 2 10 0\n", ":2:", "unknown event"},
      {"a free of a size never allocated", "a 1 10 0\nf 1 11\n", ":2:", "allocated as 10"},
      {"a free of an id not live", "a 1 10 0\nf 2 10\n", ":2:", "not live"},
      {"an id allocated twice", "a 1 10 0\na 1 10 0\n", ":2:", "allocated twice"},
      {"live bytes past 2^64", "a 1 18446744073709551615 0\na 2 1 0\n", ":2:", "overflow"},
  };
  for (const Malformed& row : table) {
    const std::string path = write("bad.trace", row.text);
    const std::string what = refusal(path);
    EXPECT_NE(what.find(path + row.line), std::string::npos) << row.why << ": " << what;
    EXPECT_NE(what.find(row.words), std::string::npos) << row.why << ": " << what;
  }
}

TEST_F(TraceFiles, P3_AFileWithNoEventIsRefused) {
  for (const std::string text : {"", "\n\n", "# workload none\n", "#\n# \n"}) {
    EXPECT_NE(refusal(write("empty.trace", text)).find("has no events"), std::string::npos)
        << "'" << text << "'";
  }
  EXPECT_NE(refusal((dir_ / "missing.trace").string()).find("cannot open trace"),
            std::string::npos);
}

TEST_F(TraceFiles, AWellFormedFileIsReadExactlyWithItsFactsAndAnyLineEnding) {
  const Trace trace = load_trace(write("good.trace", "# workload tiny\r\n"
                                                     "# note two words\n"
                                                     "#comment without a space\n"
                                                     "\n"
                                                     "a 7 100 0\r\n"
                                                     "a 9 0 3\n"
                                                     "a 8 50\n" // No stream: read as before.
                                                     "f 7 100\n"
                                                     "f 9 0\n"
                                                     "a 11 30 0"));
  EXPECT_EQ(trace.name, "good");
  EXPECT_EQ(trace.facts.size(), 2u) << "a '#' line without '# ' is a comment, not a fact";
  EXPECT_EQ(trace.facts.at("workload"), "tiny");
  EXPECT_EQ(trace.facts.at("note"), "two words");
  ASSERT_EQ(trace.events.size(), 6u);
  EXPECT_EQ(trace.allocations, 4u);
  EXPECT_EQ(trace.slots, 3u);
  EXPECT_EQ(trace.peak_in_use, 150u);
  EXPECT_EQ(trace.in_use, (std::vector<std::uint64_t>{100, 100, 150, 50, 50, 80}));
  EXPECT_EQ(trace.new_high, (std::vector<bool>{true, false, true, false, false, false}));
  // Slots: 7 -> 0, 9 -> 1, 8 -> 2; 7 and 9 freed, 11 reuses the last freed (9's).
  EXPECT_EQ(trace.events[5].slot, 1u);
  EXPECT_EQ(trace.events[3].size, 100u);
  EXPECT_EQ(trace.events[4].size, 0u);
}

TEST_F(TraceFiles, P3_AFactLongerThanAnyBufferIsOneLineNotAFactAndAnEvent) {
  // Before: lines were read 511 bytes at a time, so the rest of a long fact
  // became a line of its own — here an allocation no workload made.
  std::string fact = "# note ";
  fact.append(511 - fact.size(), 'x');
  const std::string tail = "a 5 4096 0";
  const Trace trace = load_trace(write("long.trace", fact + tail + "\na 1 10 0\n"));
  ASSERT_EQ(trace.events.size(), 1u) << "the fact's tail was read as an event";
  EXPECT_EQ(trace.events[0].size, 10u);
  EXPECT_EQ(trace.facts.at("note"), fact.substr(7) + tail);
  // A long malformed event names its own line, not a piece of it.
  const std::string what =
      refusal(write("long_bad.trace", "a 1 10 0\na 2 " + std::string(600, '1') + " 0\n"));
  EXPECT_NE(what.find("long_bad.trace:2:"), std::string::npos) << what;
  // A line past the bound is refused, not read into memory whole.
  const std::string endless = refusal(
      write("endless.trace", "a 1 10 0\n# " + std::string(detail::max_line_bytes, 'x') + "\n"));
  EXPECT_NE(endless.find("endless.trace:2: a line longer than 65536 bytes"), std::string::npos)
      << endless.substr(0, 200);
}

TEST_F(TraceFiles, P3_ATruncatedOrCorruptCompressedTraceIsRefusedNotReadInPart) {
  std::string text = "# workload big\n";
  for (int id = 0; id < 200000; ++id) {
    text += "a " + std::to_string(id) + " 4096 0\nf " + std::to_string(id) + " 4096\n";
  }
  const std::string plain = write("big.trace", text);
  ASSERT_EQ(std::system(("gzip -k '" + plain + "'").c_str()), 0);
  const std::string whole = plain + ".gz";
  EXPECT_EQ(load_trace(whole).events.size(), 400000u) << "the whole file reads";

  // Half the compressed bytes: gzip writes what it decoded, then fails.
  const auto size = std::filesystem::file_size(whole);
  std::filesystem::copy_file(whole, (dir_ / "half.trace.gz"));
  std::filesystem::resize_file(dir_ / "half.trace.gz", size / 2);
  const std::string half = refusal((dir_ / "half.trace.gz").string());
  EXPECT_NE(half.find("gzip"), std::string::npos) << half;
  EXPECT_NE(half.find("half.trace.gz"), std::string::npos) << half;

  // Not compressed at all.
  const std::string fake = refusal(write("fake.trace.gz", "a 1 10 0\n"));
  EXPECT_NE(fake.find("gzip"), std::string::npos) << fake;
  EXPECT_NE(fake.find("fake.trace.gz"), std::string::npos) << fake;
}

TEST_F(TraceFiles, P3_ACompressedPathWithAQuoteIsRefusedBeforeAnyShellSeesIt) {
  const std::string what = refusal((dir_ / "it's.trace.gz").string());
  EXPECT_NE(what.find("trace path with a quote"), std::string::npos) << what;
}

} // namespace
} // namespace taintpool::replay
