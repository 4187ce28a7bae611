// Pins: the words DeviceModel accepts in core's Race message of a launch
// that races in detect mode (O4), and the report it makes when they are
// wrong. The model reads core's message piece by piece against what it
// found — the launch, its stream, the allocation, bytes inside the
// conflict, the earlier launch or the memory's earlier use, and "; and K
// more such conflicts" with K >= 1 — where it had built the whole expected
// text as strings (allocations on the passing path; issue 13, thirty-ninth
// round). These tests fail if a wording one number, byte or word off is
// accepted, if a right one is refused, or if the report's words change.
#include <taintpool/model/device_model.hpp>
#include <taintpool/model/stream_model.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace taintpool::model {
namespace {

/// A detect-mode model with launch 1 ("producer", stream 0) having written
/// all of x; `race` then decides launch 2 ("consumer", stream 1), given
/// core's Race message `message` and the one conflict the stream model
/// found.
struct Raced {
  DeviceModel model{true};
  AllocationId x = model.create(32);
  AllocationId y = model.create(32);

  Raced() {
    const std::array<Binding, 1> writes{Binding{x, ByteRange::of(0, 32)}};
    const ModelLaunch first = model.launch("producer", {}, writes, BodyPlan{}, LaunchContext{});
    EXPECT_EQ(first.result.status, LaunchStatus::Ran);
  }

  /// x [8, 24) read (RaceKind::read_after_write) or written (write_after_write).
  ModelLaunch race(RaceKind kind, std::uint64_t earlier, const std::string& message) {
    const std::array<Binding, 1> x_part{Binding{x, ByteRange::of(8, 24)}};
    const std::array<Binding, 1> y_whole{Binding{y, ByteRange::of(0, 32)}};
    const bool reads = kind == RaceKind::read_after_write;
    const std::array<RaceFinding, 1> races{
        RaceFinding{kind, !reads, 0, earlier, 0, x, ByteRange::of(8, 24)}};
    const Error core = Error::race(message);
    LaunchContext context;
    context.stream = 1;
    context.races = races;
    context.core_error = &core;
    const std::span<const Binding> none;
    return model.launch("consumer", reads ? std::span<const Binding>(x_part) : none,
                        reads ? std::span<const Binding>(y_whole) : x_part, BodyPlan{}, context);
  }

  [[nodiscard]] std::string read_words(const std::string& bytes, const std::string& earlier) const {
    return "consumer (launch 2 on stream 1) read " + to_string(x) + " bytes [" + bytes + " that " +
           earlier + " wrote, with nothing ordering the two (detect mode queued no wait)";
  }
};

const std::string kLaunch1 = "launch 1 (\"producer\") on stream 0";

TEST(ModelRaceWording, O4_CoresReadRaceWordingIsAcceptedWithBytesAnywhereInsideTheConflict) {
  for (const std::string bytes : {"8, 24)", "8, 9)", "23, 24)", "10, 20)"}) {
    Raced raced;
    const std::string words = raced.read_words(bytes, kLaunch1);
    const ModelLaunch verdict = raced.race(RaceKind::read_after_write, 1, words);
    EXPECT_TRUE(verdict.race_wording.empty()) << bytes << ": " << verdict.race_wording.front();
    EXPECT_EQ(verdict.result.status, LaunchStatus::Failed);
    ASSERT_TRUE(verdict.result.error.has_value());
    EXPECT_EQ(*verdict.result.error, Error::race(words)); // Core's own, once it passed.
  }
}

TEST(ModelRaceWording, O4_TheMemorysEarlierUseIsNamedAsEarlierWorkOnItsStream) {
  Raced raced;
  const std::string words =
      raced.read_words("8, 24)", "earlier work on stream 0 (its memory's previous use there)");
  EXPECT_TRUE(raced.race(RaceKind::read_after_write, 0, words).race_wording.empty());
  Raced named;
  EXPECT_EQ(named.race(RaceKind::read_after_write, 0, named.read_words("8, 24)", kLaunch1))
                .race_wording.size(),
            1u);
}

TEST(ModelRaceWording, O4_AWordingANumberAByteOrAWordOffIsReportedInTheseWords) {
  const std::array<std::string, 11> wrong = {
      "consumer (launch 3 on stream 1) read {x} bytes [8, 24) that {e} wrote, {t}",
      "consumer (launch 2 on stream 2) read {x} bytes [8, 24) that {e} wrote, {t}",
      "consumer (launch 2 on stream 1) wrote {x} bytes [8, 24) that {e} wrote, {t}",
      "consumer (launch 2 on stream 1) read {x} bytes [7, 24) that {e} wrote, {t}",
      "consumer (launch 2 on stream 1) read {x} bytes [8, 25) that {e} wrote, {t}",
      "consumer (launch 2 on stream 1) read {x} bytes [9, 9) that {e} wrote, {t}",
      "consumer (launch 2 on stream 1) read {x} bytes [, 24) that {e} wrote, {t}",
      "consumer (launch 2 on stream 1) read {x} bytes [8, 24) that launch 12 (\"producer\") on "
      "stream 0 wrote, {t}",
      "consumer (launch 2 on stream 1) read {x} bytes [8, 24) that {e} wrote, {t}.",
      "producer (launch 2 on stream 1) read {x} bytes [8, 24) that {e} wrote, {t}",
      "consumer (launch 2 on stream 1) read {x} bytes [8, 24) that {e} wrote",
  };
  for (std::string words : wrong) {
    Raced raced;
    for (const auto& [name, text] :
         {std::pair<std::string, std::string>{"{x}", to_string(raced.x)},
          {"{e}", kLaunch1},
          {"{t}", "with nothing ordering the two (detect mode queued no wait)"}}) {
      if (const auto at = words.find(name); at != std::string::npos) {
        words.replace(at, name.size(), text);
      }
    }
    const ModelLaunch verdict = raced.race(RaceKind::read_after_write, 1, words);
    ASSERT_EQ(verdict.race_wording.size(), 1u) << words;
    EXPECT_EQ(verdict.race_wording.front(), "the Race failure of launch 2 reads {" +
                                                to_string(Error::race(words)) +
                                                "}, naming none of the conflicts the model found");
    EXPECT_EQ(verdict.result.status, LaunchStatus::Failed);
  }
}

TEST(ModelRaceWording, O4_AWriteRaceMayCountTheOtherConflictsButNotZeroOfThem) {
  auto wrote = [](const Raced& raced, const std::string& more) {
    return "consumer (launch 2 on stream 1) wrote " + to_string(raced.x) + " bytes [8, 24) that " +
           kLaunch1 + " wrote, with nothing ordering the two (detect mode queued no wait)" + more;
  };
  for (const std::string more :
       {"", "; and 1 more such conflicts", "; and 17 more such conflicts"}) {
    Raced raced;
    EXPECT_TRUE(raced.race(RaceKind::write_after_write, 1, wrote(raced, more)).race_wording.empty())
        << more;
  }
  for (const std::string more : {"; and 0 more such conflicts", "; and  more such conflicts",
                                 "; and 2 more such conflicts!", "; and 2 more"}) {
    Raced raced;
    EXPECT_EQ(raced.race(RaceKind::write_after_write, 1, wrote(raced, more)).race_wording.size(),
              1u)
        << more;
  }
}

} // namespace
} // namespace taintpool::model
