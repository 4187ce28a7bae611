// A launch that fails on a Device and on its model side by side: the body
// writes what model::DeviceModel's failing body writes (it reads nothing,
// so its bytes are model::kernel_output_byte of the plan's seed), then
// fails with the error. How the collective tests make an input stale on a
// rank and on the ranks model alike. Shared by collectives_never_written
// and ranks_model tests.
#pragma once

#include <taintpool/device/device.hpp>
#include <taintpool/model/device_model.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace taintpool::test {

/// The failure each side minted for the launch.
struct FailedOnBoth {
  std::optional<FailureId> core;
  std::optional<FailureId> model;
};

/// Launches `kernel` writing `into` on `device` and on `model`, failing
/// with `error` after writing the model's bytes (see above).
inline FailedOnBoth fail_on_both(Device& device, model::DeviceModel& model, std::string_view kernel,
                                 const Binding& into, const Error& error) {
  model::BodyPlan plan;
  plan.kind = model::BodyKind::fail;
  plan.error = error;
  const LaunchResult failed = device.launch(kernel, {}, {into}, [&](const KernelContext& context) {
    const std::span<std::byte> out = context.write(0);
    for (std::size_t at = 0; at < out.size(); ++at) {
      out[at] = static_cast<std::byte>(model::kernel_output_byte(plan.seed, plan.seed, 0, at));
    }
    return LaunchOutcome::failure(plan.error);
  });
  const std::vector<Binding> writes{into};
  return FailedOnBoth{failed.failure, model.launch(kernel, {}, writes, plan).result.failure};
}

} // namespace taintpool::test
