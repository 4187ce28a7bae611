// A Device over a DeferredHostBackend and its DeviceModel, side by side:
// each launch run by core and predicted by the model with one BodyPlan. The
// fixture of the DeviceModel tests that compare the two directly (the
// one-allocation comparison, the log). The test links
// taintpool::testing_planned_body and taintpool::model.
#pragma once

#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/model/device_model.hpp>
#include <taintpool/testing/planned_body.hpp>

#include <string_view>
#include <vector>

namespace taintpool::test {

struct DeferredDeviceAndModel {
  DeferredHostBackend backend;
  Device device{backend};
  model::DeviceModel oracle;

  /// One launch, run by core and predicted by the model; the verdicts are
  /// left to the comparisons.
  void launch(std::string_view kernel, const std::vector<Binding>& reads,
              const std::vector<Binding>& writes, const model::BodyPlan& plan) {
    auto body = [&](const KernelContext& context) {
      return testing::run_planned_body(plan, context, backend);
    };
    (void)device.launch(kernel, reads, writes, body);
    (void)oracle.launch(kernel, reads, writes, plan);
  }
};

} // namespace taintpool::test
