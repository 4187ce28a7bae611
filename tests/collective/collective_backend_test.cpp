// CollectiveBackend on its own (C5): the late verdicts it carries for the
// sources that expect them, in launch order, and everything else forwarded
// untouched to the inner backend. A scripted VerdictSource stands in for
// Collectives, so each verdict and each wait is one a reader can count.
#include <taintpool/collective/collective_backend.hpp>
#include <taintpool/host/host_backend.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

/// Verdicts scripted per launch; counts what the backend asked.
class ScriptedSource final : public VerdictSource {
 public:
  bool landed_clean(std::uint64_t launch) override {
    ++polls;
    return clean.count(launch) != 0;
  }
  void wait_all() override { ++waits; }
  std::optional<LateFailure> verdict(std::uint64_t launch) override {
    asked.push_back(launch);
    const auto found = failures.find(launch);
    if (found == failures.end()) {
      return std::nullopt;
    }
    return LateFailure{launch, found->second, {}};
  }

  std::map<std::uint64_t, bool> clean;
  std::map<std::uint64_t, Error> failures;
  std::vector<std::uint64_t> asked;
  int polls = 0;
  int waits = 0;
};

TEST(CollectiveBackend, C5_ExpectingALaunchNotAfterTheLastIsALoudContractViolation) {
  HostBackend host;
  CollectiveBackend backend(host);
  ScriptedSource source;
  backend.expect(5, source);
  try {
    backend.expect(3, source);
    FAIL() << "launch 3 was expected after launch 5";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("launch 3 after launch 5"), std::string::npos);
  }
  EXPECT_THROW(backend.expect(5, source), std::logic_error);
  EXPECT_EQ(backend.pending(), 1u);
  backend.forget(source);
  EXPECT_EQ(backend.pending(), 0u);
}

TEST(CollectiveBackend, C5_ALateFailureReachesTheSynchronizeAndEndsItsUnconfirmedWindow) {
  HostBackend host;
  CollectiveBackend backend(host);
  ScriptedSource source;
  source.failures.emplace(7, Error::communicator("rank 1 went away"));
  backend.expect(4, source);
  backend.expect(7, source);
  EXPECT_TRUE(backend.unconfirmed(4));
  EXPECT_TRUE(backend.unconfirmed(7));
  EXPECT_FALSE(backend.unconfirmed(5));
  EXPECT_EQ(backend.oldest_unconfirmed_launch(), std::optional<std::uint64_t>(4));
  // A poll confirms the oldest clean one and stops at the first that is not.
  source.clean.emplace(4, true);
  backend.poll();
  EXPECT_FALSE(backend.unconfirmed(4));
  EXPECT_EQ(backend.pending(), 1u);
  EXPECT_EQ(backend.oldest_unconfirmed_launch(), std::optional<std::uint64_t>(7));
  const std::vector<LateFailure> late = backend.synchronize();
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].launch, 7u);
  EXPECT_EQ(late[0].error.kind(), ErrorKind::Communicator);
  EXPECT_EQ(late[0].error.message(), "rank 1 went away");
  EXPECT_EQ(source.asked, std::vector<std::uint64_t>{7});
  EXPECT_GE(source.waits, 1);
  EXPECT_EQ(backend.pending(), 0u);
  EXPECT_FALSE(backend.unconfirmed(7));
  EXPECT_EQ(backend.oldest_unconfirmed_launch(), std::nullopt);
}

TEST(CollectiveBackend, C5_StreamsAndEventsAreTheInnerBackendsAndDestroyingOneWaitsForCollectives) {
  HostBackend host;
  CollectiveBackend backend(host);
  EXPECT_EQ(&backend.inner(), &host);
  EXPECT_EQ(backend.name(), host.name());
  EXPECT_TRUE(backend.reports_late_failures());
  EXPECT_EQ(backend.synchronous(), host.synchronous());
  EXPECT_EQ(backend.backend_data(), host.backend_data());
  EXPECT_EQ(backend.memory_config().alignment, host.memory_config().alignment);
  ScriptedSource source;
  backend.expect(1, source);
  const StreamHandle stream = backend.create_stream();
  const EventHandle event = backend.record(stream);
  backend.wait(backend.default_stream(), event);
  EXPECT_TRUE(backend.done(event));
  backend.release(event);
  const int before = source.waits;
  backend.destroy_stream(stream);
  EXPECT_EQ(source.waits, before + 1); // C5: a stream goes only after its collectives.
  backend.finish(backend.default_stream());
  EXPECT_EQ(source.waits, before + 2);
  backend.forget(source);
}

} // namespace
} // namespace taintpool
