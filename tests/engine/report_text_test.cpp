// to_string(Report), word for word (G8, N3): every branch of the printer —
// a root with and without a message, stale bytes or none, skipped, ran and
// took-part steps, the cap's note, allocation ids of another manager's space,
// and the NeverWritten wording with and without a path.
//
// Why word for word: the printer builds its text by appending into one
// buffer (issue 13, twenty-fourth round: a chain of temporaries was most of
// taint_fuzzer's allocations in its report op), and a reshaped builder can
// drop a space or a line break that a search for phrases would not notice.
// These texts are the ones the temporaries produced.
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace taintpool {
namespace {

AllocationId alloc(std::uint64_t number, std::uint64_t space = 0) {
  return allocation_id(static_cast<std::uint32_t>(space), number);
}

SkipRecord step(std::string kernel, AllocationId needed, bool ran = false, bool took_part = false) {
  return SkipRecord{std::move(kernel), needed, {}, ran, took_part};
}

Report report(Error root, AllocationId read, std::vector<SkipRecord> path, AllocationId origin) {
  return Report{FailureId::from_raw(3), std::move(root), read, std::nullopt,
                std::move(path),        origin,          0,    false};
}

TEST(ReportText, G8_ARootWithNoPathIsOneHeadlineAndTheOrigin) {
  const Report plain = report(Error::launch("load_weights"), alloc(7), {}, alloc(7));
  EXPECT_EQ(to_string(plain), "allocation 7 cannot be read: failure 3 (launch failed: "
                              "load_weights)\n  allocation 7 was left unwritten by failure 3");
  const Report bare = report(Error::torn_down(), alloc(1), {}, alloc(1));
  EXPECT_EQ(to_string(bare), "allocation 1 cannot be read: failure 3 (torn down)\n"
                             "  allocation 1 was left unwritten by failure 3");
}

TEST(ReportText, G8_EveryKindOfStepStaleBytesAndTheCapNoteArePrintedInOrder) {
  Report full =
      report(Error::out_of_memory("a message long enough to live on the heap"), alloc(15, 2),
             {step("softmax", alloc(12, 2)), step("linear", alloc(9), /*ran=*/true),
              step("all_reduce", alloc(8, 4095), true, /*took_part=*/true), step("", alloc(7))},
             alloc(7));
  full.stale = ByteRange::of(64, 128);
  full.skips_recorded = 18446744073709551615u;
  full.path_may_be_incomplete = true;
  EXPECT_EQ(to_string(full),
            "allocation 15 (memory 2) bytes [64, 128) cannot be read: failure 3 (out of memory: "
            "a message long enough to live on the heap)\n"
            "  softmax was skipped: it needed allocation 12 (memory 2)\n"
            "  linear ran on stale bytes of allocation 9 before the failure was known\n"
            "  all_reduce took part with stale bytes of allocation 8 (memory 4095) (a collective "
            "runs on every rank)\n"
            "   was skipped: it needed allocation 7\n"
            "  allocation 7 was left unwritten by failure 3\n"
            "  (18446744073709551615 skips were recorded and only the newest are kept: the path "
            "may begin earlier)");
  std::ostringstream streamed;
  streamed << full;
  EXPECT_EQ(streamed.str(), to_string(full)) << "operator<< writes the same text";
}

TEST(ReportText, N3_NeverWrittenBytesWithNoPathSayWhoseAndWhichBytes) {
  const Report direct = report(Error::never_written(), alloc(4), {}, alloc(4));
  EXPECT_EQ(to_string(direct), "allocation 4 was never written since it was created");
  Report stale = report(Error(ErrorKind::NeverWritten, "pool grow"), alloc(4, 1), {}, alloc(4, 1));
  stale.stale = ByteRange::of(0, 18446744073709551615u);
  EXPECT_EQ(to_string(stale), "allocation 4 (memory 1) bytes [0, 18446744073709551615) were "
                              "never written since it was created (pool grow)");
}

TEST(ReportText, N3_NeverWrittenBytesThroughAPathNameEveryStepAndTheOrigin) {
  Report walked = report(Error(ErrorKind::NeverWritten, "made by alloc()"), alloc(20),
                         {step("gelu", alloc(19)), step("matmul", alloc(18), /*ran=*/true),
                          step("all_gather", alloc(17, 3), true, /*took_part=*/true)},
                         alloc(17, 3));
  walked.stale = ByteRange::of(8, 16);
  walked.skips_recorded = 40;
  walked.path_may_be_incomplete = true;
  EXPECT_EQ(to_string(walked),
            "allocation 20 bytes [8, 16) cannot be read: failure 3 (never written)\n"
            "  gelu was skipped: it needed allocation 19\n"
            "  matmul ran on never-written bytes of allocation 18\n"
            "  all_gather took part with never-written bytes of allocation 17 (memory 3)\n"
            "  allocation 17 (memory 3) was never written since it was created (made by "
            "alloc())\n"
            "  (40 skips were recorded and only the newest are kept: the path may begin "
            "earlier)");
  Report quiet = report(Error::never_written(), alloc(2), {step("k", alloc(1))}, alloc(1));
  EXPECT_EQ(to_string(quiet), "allocation 2 cannot be read: failure 3 (never written)\n"
                              "  k was skipped: it needed allocation 1\n"
                              "  allocation 1 was never written since it was created");
}

TEST(ReportText, G8_IdsAndRangesPrintAsTheirOwnToStringDoes) {
  // The printer formats numbers itself; these are the words it must match.
  EXPECT_EQ(to_string(FailureId::from_raw(18446744073709551615u)), "failure 18446744073709551615");
  EXPECT_EQ(to_string(alloc(allocation_number_mask, allocation_spaces - 1)),
            "allocation 4503599627370495 (memory 4095)");
  EXPECT_EQ(to_string(ByteRange::of(0, 0)), "[0, 0)");
}

} // namespace
} // namespace taintpool
