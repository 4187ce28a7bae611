// Pins: launch plans under threads (device/launch_plan.hpp, O5). Its own
// executable, without the counting operator new (which ThreadSanitizer's
// runtime replaces too), so the tsan preset can build and run it.
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace taintpool {
namespace {

TEST(LaunchPlan, O5_ThreadsLaunchingThroughOnePlanAndItsCopiesEachRunExactlyOnce) {
  HostBackend backend;
  Device device(backend);
  std::optional<Allocation> count = device.create_buffer(sizeof(std::uint64_t));
  const Binding count_whole = count->whole();
  static_cast<void>(device.write(count_whole, std::vector<std::byte>(sizeof(std::uint64_t))));
  const Binding writes[] = {count_whole};
  const LaunchPlan plan = device.plan({}, writes);
  count.reset(); // The plan's handle is the last one: it must keep the buffer.
  // Each body adds one: it runs under the Device's lock (O5), so the total
  // is exact, and any launch lost or doubled shows.
  const auto add_one = [](const KernelContext& context) {
    std::uint64_t value = 0;
    std::memcpy(&value, context.write(0).data(), sizeof value);
    ++value;
    std::memcpy(context.write(0).data(), &value, sizeof value);
    return LaunchOutcome::success();
  };
  constexpr int threads = 4;
  constexpr int launches = 500;
  std::vector<std::thread> pool;
  for (int thread = 0; thread < threads; ++thread) {
    pool.emplace_back([&device, &plan, &add_one, thread] {
      const LaunchPlan mine = plan; // A copy on this thread: shares the handles.
      for (int at = 0; at < launches; ++at) {
        const LaunchPlan& through = at % 2 == 0 ? plan : mine;
        if (thread % 2 == 0) {
          EXPECT_TRUE(device.launch(through, "add", add_one).ran());
        } else {
          EXPECT_TRUE(device.submit(through, "add", add_one).ran());
        }
      }
    });
  }
  for (std::thread& thread : pool) {
    thread.join();
  }
  const std::vector<std::byte> bytes = device.read_bytes(count_whole);
  std::uint64_t total = 0;
  std::memcpy(&total, bytes.data(), sizeof total);
  EXPECT_EQ(total, std::uint64_t{threads} * launches);
  device.check_invariants();
}

TEST(LaunchPlan, O5_EachBodyThroughASharedPlanSeesItsOwnLaunchsNumberAndName) {
  // A launch through a plan sets the plan's context to its number and name
  // in place, under the Device's lock (launch_plan.hpp): threads launching
  // through one plan, and copying it meanwhile, must each hand their body
  // their own name and a number no other launch had (and ThreadSanitizer,
  // under the tsan preset, must see no race on the context).
  HostBackend backend;
  Device device(backend);
  const Allocation out = device.create_buffer(8);
  const Binding writes[] = {out.whole()};
  const LaunchPlan plan = device.plan({}, writes);
  constexpr int threads = 4;
  constexpr int launches = 300;
  const std::array<std::string, threads> names = {"zero", "one", "two", "three"};
  std::vector<std::uint64_t> numbers; // Appended by the bodies, under the lock.
  std::vector<std::thread> pool;
  for (int thread = 0; thread < threads; ++thread) {
    pool.emplace_back([&, thread] {
      const std::string& name = names[static_cast<std::size_t>(thread)];
      for (int at = 0; at < launches; ++at) {
        const LaunchPlan copy = plan; // Reads the context while others launch.
        const auto body = [&](const KernelContext& context) {
          EXPECT_EQ(context.kernel(), name);
          numbers.push_back(context.launch());
          return LaunchOutcome::success();
        };
        EXPECT_TRUE((at % 2 == 0 ? device.launch(plan, name, body).ran()
                                 : device.submit(copy, name, body).ran()));
      }
    });
  }
  for (std::thread& thread : pool) {
    thread.join();
  }
  ASSERT_EQ(numbers.size(), std::size_t{threads} * launches);
  std::sort(numbers.begin(), numbers.end());
  EXPECT_EQ(std::adjacent_find(numbers.begin(), numbers.end()), numbers.end())
      << "two launches saw one number";
  device.check_invariants();
}

} // namespace
} // namespace taintpool
