// A buffer made by core and predicted by the model in the same step, for the
// tests that compare a Device with its DeviceModel rank by rank: both must
// name it by one id, or every later comparison would compare different
// buffers. The test links taintpool::model.
#pragma once

#include <taintpool/device/device.hpp>
#include <taintpool/model/device_model.hpp>

#include <cstdint>
#include <stdexcept>

namespace taintpool::test {

/// Core's create_buffer(size), then the model's create(size); throws
/// std::logic_error (the test fails there, as an ASSERT would) when the
/// model's id is not core's.
inline Allocation created_on_both(Device& device, model::DeviceModel& model, std::uint64_t size) {
  Allocation made = device.create_buffer(size);
  const AllocationId predicted = model.create(size);
  if (predicted != made.id()) {
    throw std::logic_error("the model made " + to_string(predicted) + ", core " +
                           to_string(made.id()));
  }
  return made;
}

} // namespace taintpool::test
